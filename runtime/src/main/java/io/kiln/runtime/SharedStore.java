package io.kiln.runtime;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * A named, cluster-wide map from string keys to typed values ({@link KilnRuntime#store}), for components
 * above the runtime that keep cluster-wide state (the serve controller's desired deployments, pipeline
 * runs). Values are stored in their {@link StoreCodec}'s text form; two nodes opening the same name see
 * the same entries.
 *
 * <p><b>Atomicity.</b> {@link #putIfAbsent}, {@link #replace} and {@link #remove(String, Entry)} are
 * atomic per key across the cluster (guarantee 1 of {@link io.kiln.runtime.spi.cluster.ClusterBackend}):
 * of concurrent writers racing on one key, exactly one conditional write succeeds. Compare-and-set compares
 * the <em>stored form</em>: an {@link Entry} read earlier carries it as its {@link Entry#version()}.
 * Plain {@link #put} and {@link #remove(String)} overwrite unconditionally.
 *
 * <p><b>Unreadable entries.</b> An entry whose stored form does not decode (written by another Kiln
 * version) is never dropped by the store: reads return it with {@link Entry#readable()} false, and its
 * {@link Entry#value()} throws {@link UnreadableEntryException} naming the store and key. A caller decides
 * whether to skip it (and log) or fail; it can still replace or remove it by its version.
 *
 * <p><b>Threading.</b> Thread-safe; no method blocks. Futures complete on the cluster back-end's threads
 * (do not block in their continuations). Encoding errors of {@code put} values fail the returned future.
 */
public interface SharedStore<V> {

  /** The shared map's cluster-wide name, e.g. {@code kiln.deployments}. */
  String name();

  /** The entry under {@code key}, or empty if there is none. */
  CompletionStage<Optional<Entry<V>>> get(String key);

  CompletionStage<Void> put(String key, V value);

  /** Stores {@code value} if the key is absent; completes with the entry already there, or empty if stored. */
  CompletionStage<Optional<Entry<V>>> putIfAbsent(String key, V value);

  /**
   * Replaces the entry with {@code update} only if its stored form is still {@code expected}'s; completes
   * with whether it did (false: another writer changed or removed it since {@code expected} was read).
   */
  CompletionStage<Boolean> replace(String key, Entry<V> expected, V update);

  CompletionStage<Void> remove(String key);

  /** Removes the entry only if its stored form is still {@code expected}'s; completes with whether it did. */
  CompletionStage<Boolean> remove(String key, Entry<V> expected);

  /** Every entry, by key, unreadable ones included (see the class comment). */
  CompletionStage<Map<String, Entry<V>>> entries();

  /**
   * Tells {@code listener} of every later change, from any node, in order per key. Returns a registration
   * id for {@link #removeListener}.
   */
  String addListener(ChangeListener<V> listener);

  void removeListener(String registrationId);

  /** A change to one entry; called off the writer's thread and must not block. */
  @FunctionalInterface
  interface ChangeListener<V> {
    /** {@code entry} is the new entry, or null when the key was removed. */
    void changed(String key, Entry<V> entry);
  }

  /**
   * One stored entry: its decoded value (or why it does not decode) and its version, the opaque stored
   * form that compare-and-set writes compare against. Immutable.
   */
  final class Entry<V> {
    private final String store;
    private final String key;
    private final V value;
    private final String version;
    private final RuntimeException error;

    private Entry(String store, String key, V value, String version, RuntimeException error) {
      this.store = store;
      this.key = key;
      this.value = value;
      this.version = Objects.requireNonNull(version, "version");
      this.error = error;
    }

    /** An entry whose stored form {@code version} decoded to {@code value}. */
    public static <V> Entry<V> of(String store, String key, V value, String version) {
      return new Entry<>(store, key, Objects.requireNonNull(value, "value"), version, null);
    }

    /** An entry whose stored form {@code version} did not decode, failing with {@code error}. */
    public static <V> Entry<V> unreadable(String store, String key, String version, RuntimeException error) {
      return new Entry<>(store, key, null, version, Objects.requireNonNull(error, "error"));
    }

    public String key() {
      return key;
    }

    /** Whether the stored form decoded; when false, {@link #value()} throws. */
    public boolean readable() {
      return error == null;
    }

    /**
     * The decoded value.
     *
     * @throws UnreadableEntryException if the stored form did not decode
     */
    public V value() {
      if (error != null) {
        throw new UnreadableEntryException("entry " + key + " of " + store + " does not read: " + error.getMessage(),
            error);
      }
      return value;
    }

    /** The stored form, for compare-and-set; opaque to callers. */
    public String version() {
      return version;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Entry<?> e && store.equals(e.store) && key.equals(e.key) && version.equals(e.version);
    }

    @Override
    public int hashCode() {
      return Objects.hash(store, key, version);
    }

    @Override
    public String toString() {
      return "Entry[" + store + "/" + key + (readable() ? "" : ", unreadable") + "]";
    }
  }
}
