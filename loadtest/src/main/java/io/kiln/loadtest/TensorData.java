package io.kiln.loadtest;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * One input tensor of a request, held as the raw little-endian bytes the binary and gRPC encodings
 * send. Immutable: accessors return copies or read-only views.
 */
public final class TensorData {
  private final String name;
  private final String datatype;
  private final long[] shape;
  private final byte[] raw;

  /**
   * @param raw flattened row-major little-endian element bytes; copied
   * @throws IllegalArgumentException if the byte count does not match shape and datatype
   */
  public TensorData(String name, String datatype, long[] shape, byte[] raw) {
    this.name = Objects.requireNonNull(name, "name");
    this.datatype = Objects.requireNonNull(datatype, "datatype");
    this.shape = shape.clone();
    long elements = elementCount(this.shape);
    int width = elementWidth(datatype);
    if (elements * width != raw.length) {
      throw new IllegalArgumentException("tensor '" + name + "': " + raw.length + " bytes do not match shape "
          + Arrays.toString(shape) + " of " + datatype);
    }
    this.raw = raw.clone();
  }

  public String name() {
    return name;
  }

  public String datatype() {
    return datatype;
  }

  public long[] shape() {
    return shape.clone();
  }

  /** A read-only little-endian view of the element bytes. */
  public ByteBuffer raw() {
    return ByteBuffer.wrap(raw).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
  }

  public int byteSize() {
    return raw.length;
  }

  /**
   * Product of the dimensions.
   *
   * @throws IllegalArgumentException for a negative dimension
   */
  public static long elementCount(long[] shape) {
    long n = 1;
    for (long d : shape) {
      if (d < 0) {
        throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
      }
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  /**
   * Bytes per element of an OIP datatype that has a fixed width.
   *
   * @throws IllegalArgumentException for BYTES or an unknown datatype
   */
  public static int elementWidth(String datatype) {
    return switch (datatype) {
      case "BOOL", "INT8", "UINT8" -> 1;
      case "INT16", "UINT16", "FP16", "BF16" -> 2;
      case "INT32", "UINT32", "FP32" -> 4;
      case "INT64", "UINT64", "FP64" -> 8;
      default -> throw new IllegalArgumentException("datatype " + datatype + " has no fixed element width");
    };
  }
}
