package io.kiln.runtime.spi.cluster;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * A cluster-wide map from string keys to string (JSON) values. Conditional operations are atomic per key
 * (see {@link ClusterBackend} guarantee 1). All operations are non-blocking.
 */
public interface SharedMap {

  String name();

  CompletionStage<Optional<String>> get(String key);

  CompletionStage<Void> put(String key, String value);

  /** Stores {@code value} if the key is absent; returns the value already there, or empty if stored. */
  CompletionStage<Optional<String>> putIfAbsent(String key, String value);

  /** Replaces the value only if it currently equals {@code expected}; returns whether it did. */
  CompletionStage<Boolean> replace(String key, String expected, String update);

  CompletionStage<Void> remove(String key);

  /** Removes the entry only if its value equals {@code expected}; returns whether it did. */
  CompletionStage<Boolean> remove(String key, String expected);

  CompletionStage<Map<String, String>> entries();

  /**
   * Tells {@code listener} of every later change (from any member). Returns a registration id for
   * {@link #removeListener}.
   */
  String addListener(EntryListener listener);

  void removeListener(String registrationId);

  /** A change to one entry: {@code value} is null when the entry was removed. */
  @FunctionalInterface
  interface EntryListener {
    void changed(String key, String value);
  }
}
