package io.kiln.runtime.impl;

import io.kiln.runtime.ActorState;
import io.kiln.runtime.WireCodec;
import io.kiln.runtime.spi.cluster.SharedMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Typed access to the named-actor registry, plus waiting for an entry to reach a state (used by
 * get-or-create when another creator's actor is still PENDING).
 */
final class ActorRegistry {

  static final String MAP = "kiln.actors";

  private final SharedMap map;
  private final Map<String, List<Waiter>> waiters = new ConcurrentHashMap<>();

  private record Waiter(Predicate<ActorRecord> until, CompletableFuture<Optional<ActorRecord>> future) {
  }

  ActorRegistry(SharedMap map) {
    this.map = map;
    map.addListener(this::changed);
  }

  CompletionStage<Optional<ActorRecord>> get(String key) {
    return map.get(key).thenApply(v -> v.map(ActorRegistry::decode));
  }

  /** Stores {@code rec} unless the key is taken; returns the record already there, or empty if stored. */
  CompletionStage<Optional<ActorRecord>> putIfAbsent(ActorRecord rec, String json) {
    return map.putIfAbsent(rec.key(), json).thenApply(v -> v.map(ActorRegistry::decode));
  }

  CompletionStage<Boolean> replace(String key, String expectedJson, String updateJson) {
    return map.replace(key, expectedJson, updateJson);
  }

  CompletionStage<Boolean> remove(String key, String expectedJson) {
    return map.remove(key, expectedJson);
  }

  CompletionStage<List<ActorRecord>> all() {
    return map.entries().thenApply(m -> {
      List<ActorRecord> out = new ArrayList<>();
      m.values().forEach(v -> out.add(decode(v)));
      return out;
    });
  }

  CompletionStage<Map<String, String>> rawEntries() {
    return map.entries();
  }

  /**
   * Completes with the entry once {@code until} holds for it, or empty once the entry is gone (the actor
   * died and its name was freed).
   */
  CompletionStage<Optional<ActorRecord>> await(String key, Predicate<ActorRecord> until) {
    CompletableFuture<Optional<ActorRecord>> f = new CompletableFuture<>();
    Waiter w = new Waiter(until, f);
    waiters.computeIfAbsent(key, k -> new java.util.concurrent.CopyOnWriteArrayList<>()).add(w);
    // Registered before reading, so a change between the read and the registration is not missed.
    get(key).whenComplete((rec, err) -> {
      if (err != null) {
        f.completeExceptionally(err);
      } else {
        offer(w, rec.orElse(null));
      }
    });
    f.whenComplete((r, e) -> {
      List<Waiter> list = waiters.get(key);
      if (list != null) {
        list.remove(w);
      }
    });
    return f;
  }

  private void changed(String key, String value) {
    List<Waiter> list = waiters.get(key);
    if (list == null || list.isEmpty()) {
      return;
    }
    ActorRecord rec = value == null ? null : decode(value);
    for (Waiter w : list) {
      offer(w, rec);
    }
  }

  private static void offer(Waiter w, ActorRecord rec) {
    if (rec == null || rec.state() == ActorState.DEAD) {
      w.future.complete(Optional.empty());
    } else if (w.until.test(rec)) {
      w.future.complete(Optional.of(rec));
    }
  }

  static ActorRecord decode(String json) {
    return WireCodec.fromJson(json, ActorRecord.class);
  }

  static String encode(ActorRecord rec) {
    return WireCodec.toJson(rec);
  }
}
