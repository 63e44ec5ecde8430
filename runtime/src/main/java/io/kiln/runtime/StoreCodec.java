package io.kiln.runtime;

import java.util.Objects;

/**
 * How a {@link SharedStore}'s values are stored: as text (JSON by convention) that every node, of this
 * Kiln version or another, reads back. Nothing is Java-serialized.
 *
 * <p>Implementations are stateless and thread-safe.
 */
public interface StoreCodec<V> {

  /** The stored form of {@code value}; throws (unchecked) if it cannot be encoded. */
  String encode(V value);

  /**
   * Reads a stored form back. Throws (unchecked) when it does not read, e.g. written by another Kiln
   * version; the store then reports the entry as unreadable instead of failing the whole read.
   */
  V decode(String stored);

  /** Values as {@link WireCodec} JSON of {@code type} (a record or a Jackson-readable class). */
  static <V> StoreCodec<V> json(Class<V> type) {
    Objects.requireNonNull(type, "type");
    return new StoreCodec<>() {
      @Override
      public String encode(V value) {
        return WireCodec.toJson(value);
      }

      @Override
      public V decode(String stored) {
        return WireCodec.fromJson(stored, type);
      }
    };
  }
}
