package io.kiln.pools.spi;

import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The elements of a {@link DataType#BYTES} tensor's data: each a 4-byte little-endian length and that many
 * bytes, back to back (Kiln's internal form, the same as the OIP binary extension's and Triton's). Stateless.
 * Public for the module's API package (the {@link io.kiln.pools.RequestValidator}); not an API of its own.
 */
public final class ByteElements {

  private ByteElements() {
  }

  /**
   * Offsets of each element's length prefix in {@code data}, plus one past the end ({@code expected + 1}
   * entries), checking that {@code data} holds exactly {@code expected} well-formed elements.
   *
   * @throws IllegalArgumentException naming {@code where} and the first element that does not fit
   */
  public static int[] offsets(byte[] data, long expected, String where) {
    if (expected > data.length / 4) {
      throw new IllegalArgumentException(where + ": " + expected + " BYTES elements need at least " + expected * 4
          + " bytes, the data has " + data.length);
    }
    int[] at = new int[(int) expected + 1];
    int pos = 0;
    for (int i = 0; i < expected; i++) {
      at[i] = pos;
      if (data.length - pos < 4) {
        throw new IllegalArgumentException(where + ": BYTES element " + i + " has a truncated 4-byte length");
      }
      long len = Integer.toUnsignedLong(getIntLe(data, pos));
      pos += 4;
      if (len > data.length - pos) {
        throw new IllegalArgumentException(where + ": BYTES element " + i + " claims " + len + " bytes but only "
            + (data.length - pos) + " remain");
      }
      pos += (int) len;
    }
    if (pos != data.length) {
      throw new IllegalArgumentException(where + ": " + (data.length - pos) + " bytes follow the last of "
          + expected + " BYTES elements");
    }
    at[(int) expected] = pos;
    return at;
  }

  /** The elements of a BYTES tensor, each its own array. */
  public static List<byte[]> split(Tensor t) {
    int[] at = offsets(t.data(), t.elementCount(), "tensor '" + t.name() + "'");
    List<byte[]> out = new ArrayList<>(at.length - 1);
    for (int i = 0; i + 1 < at.length; i++) {
      byte[] e = new byte[at[i + 1] - at[i] - 4];
      System.arraycopy(t.data(), at[i] + 4, e, 0, e.length);
      out.add(e);
    }
    return out;
  }

  /** The elements of a BYTES tensor as UTF-8 strings (malformed sequences become U+FFFD). */
  public static String[] strings(Tensor t) {
    List<byte[]> parts = split(t);
    String[] out = new String[parts.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = new String(parts.get(i), StandardCharsets.UTF_8);
    }
    return out;
  }

  /** The length-prefixed data of {@code elements}. */
  public static byte[] join(List<byte[]> elements) {
    long total = 0;
    for (byte[] e : elements) {
      total += 4L + e.length;
    }
    if (total > RowStacker.MAX_TENSOR_BYTES) {
      throw new IllegalArgumentException("BYTES elements take " + total + " bytes, more than one tensor can hold");
    }
    byte[] out = new byte[(int) total];
    int pos = 0;
    for (byte[] e : elements) {
      putIntLe(out, pos, e.length);
      System.arraycopy(e, 0, out, pos + 4, e.length);
      pos += 4 + e.length;
    }
    return out;
  }

  /** The length-prefixed UTF-8 data of {@code strings}. */
  public static byte[] joinStrings(String[] strings) {
    List<byte[]> parts = new ArrayList<>(strings.length);
    for (String s : strings) {
      parts.add(s.getBytes(StandardCharsets.UTF_8));
    }
    return join(parts);
  }

  static int getIntLe(byte[] b, int at) {
    return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
  }

  private static void putIntLe(byte[] b, int at, int v) {
    b[at] = (byte) v;
    b[at + 1] = (byte) (v >>> 8);
    b[at + 2] = (byte) (v >>> 16);
    b[at + 3] = (byte) (v >>> 24);
  }
}
