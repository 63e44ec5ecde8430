package io.kiln.pools;

import java.util.Optional;

/** Tensor element types of the Open Inference Protocol v2, with their size in bytes. */
public enum DataType {
  BOOL(1), UINT8(1), UINT16(2), UINT32(4), UINT64(8),
  INT8(1), INT16(2), INT32(4), INT64(8),
  FP16(2), FP32(4), FP64(8), BF16(2),
  /** Variable-length byte strings; in raw form each element is a 4-byte little-endian length and its bytes. */
  BYTES(-1);

  private final int byteSize;

  DataType(int byteSize) {
    this.byteSize = byteSize;
  }

  /** Bytes per element, or -1 for {@link #BYTES}. */
  public int byteSize() {
    return byteSize;
  }

  /** The protocol's spelling, e.g. {@code "FP32"}, or empty if it names no known type. */
  public static Optional<DataType> parse(String name) {
    if (name == null) {
      return Optional.empty();
    }
    for (DataType t : values()) {
      if (t.name().equals(name)) {
        return Optional.of(t);
      }
    }
    return Optional.empty();
  }
}
