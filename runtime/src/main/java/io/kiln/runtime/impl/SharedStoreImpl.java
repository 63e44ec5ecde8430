package io.kiln.runtime.impl;

import io.kiln.runtime.SharedStore;
import io.kiln.runtime.StoreCodec;
import io.kiln.runtime.spi.cluster.SharedMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** A {@link SharedStore} over one of the back-end's string maps: values pass through the codec, nothing else. */
final class SharedStoreImpl<V> implements SharedStore<V> {

  private final SharedMap map;
  private final StoreCodec<V> codec;

  SharedStoreImpl(SharedMap map, StoreCodec<V> codec) {
    this.map = map;
    this.codec = codec;
  }

  @Override
  public String name() {
    return map.name();
  }

  @Override
  public CompletionStage<Optional<Entry<V>>> get(String key) {
    return map.get(key).thenApply(v -> v.map(json -> entry(key, json)));
  }

  @Override
  public CompletionStage<Void> put(String key, V value) {
    String json;
    try {
      json = codec.encode(value);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return map.put(key, json);
  }

  @Override
  public CompletionStage<Optional<Entry<V>>> putIfAbsent(String key, V value) {
    String json;
    try {
      json = codec.encode(value);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return map.putIfAbsent(key, json).thenApply(v -> v.map(existing -> entry(key, existing)));
  }

  @Override
  public CompletionStage<Boolean> replace(String key, Entry<V> expected, V update) {
    String json;
    try {
      json = codec.encode(update);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return map.replace(key, expected.version(), json);
  }

  @Override
  public CompletionStage<Void> remove(String key) {
    return map.remove(key);
  }

  @Override
  public CompletionStage<Boolean> remove(String key, Entry<V> expected) {
    return map.remove(key, expected.version());
  }

  @Override
  public CompletionStage<Map<String, Entry<V>>> entries() {
    return map.entries().thenApply(m -> {
      Map<String, Entry<V>> out = new LinkedHashMap<>();
      m.forEach((k, json) -> out.put(k, entry(k, json)));
      return out;
    });
  }

  @Override
  public String addListener(ChangeListener<V> listener) {
    return map.addListener((k, json) -> listener.changed(k, json == null ? null : entry(k, json)));
  }

  @Override
  public void removeListener(String registrationId) {
    map.removeListener(registrationId);
  }

  private Entry<V> entry(String key, String json) {
    try {
      return Entry.of(map.name(), key, codec.decode(json), json);
    } catch (RuntimeException e) {
      return Entry.unreadable(map.name(), key, json, e);
    }
  }
}
