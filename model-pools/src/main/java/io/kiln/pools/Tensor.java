package io.kiln.pools;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * A named tensor: element type, shape and its elements as raw little-endian bytes in row-major order
 * (the layout of the OIP binary extension and of {@code raw_input_contents}). Immutable by contract: the
 * arrays are not copied on the hot path, so callers must not modify them after construction.
 *
 * <p>For {@link DataType#BYTES} each element is a 4-byte little-endian length followed by its bytes, elements
 * back to back in row-major order: the binary extension's and {@code raw_input_contents}' form, so those pass
 * through unchanged. Rows then differ in size: stacking a batch concatenates the requests' data, and splitting
 * it walks the length prefixes. The constructor does not parse BYTES data; the gateway's decoders and
 * {@link RequestValidator#validate} check it (docs/bytes.md).
 */
public final class Tensor {

  private final String name;
  private final DataType datatype;
  private final long[] shape;
  private final byte[] data;

  /**
   * @throws IllegalArgumentException if a dimension is negative or, for fixed-size types, the byte count
   *     does not equal elements × element size
   */
  public Tensor(String name, DataType datatype, long[] shape, byte[] data) {
    this.name = Objects.requireNonNull(name, "name");
    this.datatype = Objects.requireNonNull(datatype, "datatype");
    this.shape = Objects.requireNonNull(shape, "shape");
    this.data = Objects.requireNonNull(data, "data");
    long n = elementCount(shape);
    if (datatype != DataType.BYTES && n * datatype.byteSize() != data.length) {
      throw new IllegalArgumentException("tensor '" + name + "': shape " + Arrays.toString(shape) + " of "
          + datatype + " needs " + n * datatype.byteSize() + " bytes, got " + data.length);
    }
  }

  public static Tensor ofFloats(String name, long[] shape, float[] values) {
    ByteBuffer buf = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    buf.asFloatBuffer().put(values);
    return new Tensor(name, DataType.FP32, shape, buf.array());
  }

  /** A {@link DataType#BYTES} tensor of {@code elements} (row-major), each element its own bytes. */
  public static Tensor ofBytes(String name, long[] shape, java.util.List<byte[]> elements) {
    if (elementCount(shape) != elements.size()) {
      throw new IllegalArgumentException("tensor '" + name + "': shape " + Arrays.toString(shape) + " holds "
          + elementCount(shape) + " elements, got " + elements.size());
    }
    return new Tensor(name, DataType.BYTES, shape, io.kiln.pools.spi.ByteElements.join(elements));
  }

  /**
   * The elements of a {@link DataType#BYTES} tensor, each its own array.
   *
   * @throws IllegalArgumentException if the tensor is not BYTES or its data is not {@link #elementCount} well-formed
   *     length-prefixed elements
   */
  public java.util.List<byte[]> byteElements() {
    if (datatype != DataType.BYTES) {
      throw new IllegalArgumentException("tensor '" + name + "' is " + datatype + ", not BYTES");
    }
    return io.kiln.pools.spi.ByteElements.split(this);
  }

  /**
   * Elements in a shape, i.e. the product of its dimensions.
   *
   * @throws IllegalArgumentException if a dimension is negative or the product overflows a long
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

  public String name() {
    return name;
  }

  public DataType datatype() {
    return datatype;
  }

  /** The shape; do not modify. */
  public long[] shape() {
    return shape;
  }

  /** The raw little-endian bytes; do not modify. */
  public byte[] data() {
    return data;
  }

  public long elementCount() {
    return elementCount(shape);
  }

  /** A copy under another name (outputs are renamed to the requested output names). */
  public Tensor withName(String newName) {
    return new Tensor(newName, datatype, shape, data);
  }

  /** The elements as floats; only for {@link DataType#FP32}. */
  public float[] asFloats() {
    if (datatype != DataType.FP32) {
      throw new IllegalStateException("tensor '" + name + "' is " + datatype + ", not FP32");
    }
    float[] out = new float[data.length / 4];
    ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
    return out;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Tensor t && t.name.equals(name) && t.datatype == datatype
        && Arrays.equals(t.shape, shape) && Arrays.equals(t.data, data);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, datatype, Arrays.hashCode(shape), Arrays.hashCode(data));
  }

  @Override
  public String toString() {
    return "Tensor[" + name + ", " + datatype + ", " + Arrays.toString(shape) + ", " + data.length + " bytes]";
  }
}
