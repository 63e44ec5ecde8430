package io.kiln.gateway.impl;

import io.kiln.pools.InferenceException;

/**
 * Raw tensor bytes as the binary tensor extension and gRPC {@code raw_*_contents} carry them: fixed-size
 * elements little-endian, BYTES elements as a 4-byte little-endian length and the bytes.
 */
final class BinaryTensors {

  private BinaryTensors() {
  }

  /**
   * Checks that {@code data} holds exactly {@code expected} length-prefixed BYTES elements.
   *
   * @param where names the field in errors
   */
  static void checkBytesElements(byte[] data, long expected, String where) {
    long count = 0;
    int pos = 0;
    while (pos < data.length) {
      if (data.length - pos < 4) {
        throw InferenceException.invalid(where + ": BYTES element " + count + " has a truncated 4-byte length");
      }
      long len = (data[pos] & 0xffL) | (data[pos + 1] & 0xffL) << 8 | (data[pos + 2] & 0xffL) << 16
          | (data[pos + 3] & 0xffL) << 24;
      pos += 4;
      if (len > data.length - pos) {
        throw InferenceException.invalid(where + ": BYTES element " + count + " claims " + len + " bytes but only "
            + (data.length - pos) + " remain");
      }
      pos += (int) len;
      count++;
    }
    if (count != expected) {
      throw InferenceException.invalid(where + ": has " + count + " BYTES elements but the shape needs " + expected);
    }
  }

  /** Splits BYTES raw data into its elements. */
  static byte[][] splitBytesElements(byte[] data) {
    int n = 0;
    for (int pos = 0; pos < data.length; n++) {
      pos += 4 + length(data, pos);
    }
    byte[][] out = new byte[n][];
    int pos = 0;
    for (int i = 0; i < n; i++) {
      int len = length(data, pos);
      out[i] = java.util.Arrays.copyOfRange(data, pos + 4, pos + 4 + len);
      pos += 4 + len;
    }
    return out;
  }

  /** Joins BYTES elements into raw data. */
  static byte[] joinBytesElements(java.util.List<byte[]> elements) {
    long total = 0;
    for (byte[] e : elements) {
      total += 4L + e.length;
    }
    byte[] out = new byte[Math.toIntExact(total)];
    int pos = 0;
    for (byte[] e : elements) {
      out[pos] = (byte) e.length;
      out[pos + 1] = (byte) (e.length >>> 8);
      out[pos + 2] = (byte) (e.length >>> 16);
      out[pos + 3] = (byte) (e.length >>> 24);
      System.arraycopy(e, 0, out, pos + 4, e.length);
      pos += 4 + e.length;
    }
    return out;
  }

  private static int length(byte[] data, int pos) {
    if (data.length - pos < 4) {
      throw new IllegalStateException("BYTES tensor data truncated at offset " + pos);
    }
    int len = (data[pos] & 0xff) | (data[pos + 1] & 0xff) << 8 | (data[pos + 2] & 0xff) << 16 | (data[pos + 3] & 0xff) << 24;
    if (len < 0 || len > data.length - pos - 4) {
      throw new IllegalStateException("BYTES tensor element at offset " + pos + " overruns its data");
    }
    return len;
  }
}
