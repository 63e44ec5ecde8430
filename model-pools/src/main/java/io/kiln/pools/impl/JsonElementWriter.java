package io.kiln.pools.impl;

import io.kiln.pools.HalfFloats;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.kiln.pools.DataType;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One JSON tensor's elements ({@link JsonRequestReader}) as the protocol's raw little-endian bytes: each element checked
 * against its datatype (kind and range) as it is written, at most the shape's count. Messages name the field
 * ({@code at}) and the element's index. One per tensor; not thread-safe.
 */
final class JsonElementWriter {
  private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

  private final DataType type;
  private final long expected;
  private final String at;
  private byte[] buf = new byte[256];
  private int size;
  private long count;

  JsonElementWriter(DataType type, long expected, String at) {
    this.type = type;
    this.expected = expected;
    this.at = at;
    if (type != DataType.BYTES && expected > (Integer.MAX_VALUE - 8) / type.byteSize()) {
      throw new IllegalArgumentException(at + ": " + expected + " " + type + " elements do not fit one tensor");
    }
  }

  void element(JsonParser p) throws IOException {
    if (count == expected) {
      throw new IllegalArgumentException(at + ": more elements than the shape's " + expected);
    }
    JsonToken t = p.currentToken();
    switch (type) {
      case BOOL -> {
        if (t != JsonToken.VALUE_TRUE && t != JsonToken.VALUE_FALSE) {
          throw wrong(p, "a boolean (true or false)");
        }
        put(t == JsonToken.VALUE_TRUE ? 1 : 0, 1);
      }
      case BYTES -> {
        if (t != JsonToken.VALUE_STRING) {
          throw wrong(p, "a string");
        }
        byte[] utf8 = p.getText().getBytes(StandardCharsets.UTF_8);
        put(utf8.length, 4);
        ensure(utf8.length);
        System.arraycopy(utf8, 0, buf, size, utf8.length);
        size += utf8.length;
      }
      case FP16, BF16, FP32, FP64 -> real(p, t);
      default -> integer(p, t);
    }
    count++;
  }

  private void real(JsonParser p, JsonToken t) throws IOException {
    if (t != JsonToken.VALUE_NUMBER_INT && t != JsonToken.VALUE_NUMBER_FLOAT) {
      throw wrong(p, "a number (" + type + ")");
    }
    double v = p.getDoubleValue();
    if (type == DataType.FP64) {
      put(Double.doubleToRawLongBits(v), 8);
      return;
    }
    float f = (float) v;
    short h = type == DataType.FP16 ? HalfFloats.toFp16(f) : type == DataType.BF16 ? HalfFloats.toBf16(f) : 0;
    float back = type == DataType.FP32 ? f : type == DataType.FP16 ? HalfFloats.fromFp16(h) : HalfFloats.fromBf16(h);
    if (Float.isInfinite(back) && !Double.isInfinite(v)) {
      throw new IllegalArgumentException(at + ": element " + count + " (" + p.getText() + ") is out of " + type
          + "'s range");
    }
    if (type == DataType.FP32) {
      put(Float.floatToRawIntBits(f), 4);
    } else {
      put(h, 2);
    }
  }

  private void integer(JsonParser p, JsonToken t) throws IOException {
    if (t != JsonToken.VALUE_NUMBER_INT) {
      throw wrong(p, "an integer (" + type + ")");
    }
    BigInteger v = p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? p.getBigIntegerValue()
        : BigInteger.valueOf(p.getLongValue());
    BigInteger[] range = switch (type) {
      case INT8 -> range(Byte.MIN_VALUE, Byte.MAX_VALUE);
      case INT16 -> range(Short.MIN_VALUE, Short.MAX_VALUE);
      case INT32 -> range(Integer.MIN_VALUE, Integer.MAX_VALUE);
      case INT64 -> range(Long.MIN_VALUE, Long.MAX_VALUE);
      case UINT8 -> range(0, 0xff);
      case UINT16 -> range(0, 0xffff);
      case UINT32 -> range(0, 0xffff_ffffL);
      case UINT64 -> new BigInteger[] {BigInteger.ZERO, UINT64_MAX};
      default -> throw new IllegalStateException(type + " is not an integer type");
    };
    if (v.compareTo(range[0]) < 0 || v.compareTo(range[1]) > 0) {
      throw new IllegalArgumentException(at + ": element " + count + " (" + v + ") is out of " + type + "'s range "
          + range[0] + ".." + range[1]);
    }
    put(v.longValue(), type.byteSize()); // UINT64 above Long.MAX_VALUE keeps its bits
  }

  private static BigInteger[] range(long min, long max) {
    return new BigInteger[] {BigInteger.valueOf(min), BigInteger.valueOf(max)};
  }

  private IllegalArgumentException wrong(JsonParser p, String want) throws IOException {
    String got = p.currentToken() == JsonToken.VALUE_STRING ? "\"" + p.getText() + "\"" : p.getText();
    return new IllegalArgumentException(at + ": element " + count + " is " + got + ", not " + want);
  }

  /** The low {@code bytes} bytes of {@code v}, little-endian. */
  private void put(long v, int bytes) {
    ensure(bytes);
    for (int i = 0; i < bytes; i++) {
      buf[size++] = (byte) (v >>> (8 * i));
    }
  }

  private void ensure(int more) {
    if (size + (long) more > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(at + ": the elements do not fit one tensor");
    }
    if (size + more > buf.length) {
      buf = Arrays.copyOf(buf, (int) Math.min(Integer.MAX_VALUE - 8, Math.max(size + (long) more, 2L * buf.length)));
    }
  }

  /** The elements written so far. */
  long count() {
    return count;
  }

  byte[] bytes() {
    return Arrays.copyOf(buf, size);
  }
}
