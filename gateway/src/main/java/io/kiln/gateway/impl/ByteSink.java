package io.kiln.gateway.impl;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A growable byte array the codecs write into: raw little-endian tensor elements, and JSON text. Its array
 * is handed on without a copy ({@link #array()}, {@link #length()}) when it is exactly full or the receiver
 * takes a length. Not thread-safe; one per message.
 */
final class ByteSink {

  private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle SHORT_LE = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private byte[] bytes;
  private int length;

  ByteSink(int capacity) {
    bytes = new byte[Math.max(capacity, 16)];
  }

  byte[] array() {
    return bytes;
  }

  int length() {
    return length;
  }

  /** The bytes written, in an array of exactly that length (the same array when it is full). */
  byte[] toArray() {
    return length == bytes.length ? bytes : Arrays.copyOf(bytes, length);
  }

  void ensure(int more) {
    if (bytes.length - length < more) {
      long want = Math.max((long) bytes.length * 2, (long) length + more);
      bytes = Arrays.copyOf(bytes, Math.toIntExact(Math.min(want, Integer.MAX_VALUE - 8)));
    }
  }

  /** Counts {@code n} bytes the caller wrote into {@link #array()} from {@link #length()} (after {@link #ensure}). */
  void advance(int n) {
    length += n;
  }

  void put(byte b) {
    ensure(1);
    bytes[length++] = b;
  }

  void put(byte[] src, int offset, int n) {
    ensure(n);
    System.arraycopy(src, offset, bytes, length, n);
    length += n;
  }

  void put(byte[] src) {
    put(src, 0, src.length);
  }

  /** Printable ASCII (the caller checked); one byte per char. */
  void putAscii(String s) {
    int n = s.length();
    ensure(n);
    s.getBytes(0, n, bytes, length);
    length += n;
  }

  void putShortLE(short v) {
    ensure(2);
    SHORT_LE.set(bytes, length, v);
    length += 2;
  }

  void putIntLE(int v) {
    ensure(4);
    INT_LE.set(bytes, length, v);
    length += 4;
  }

  void putLongLE(long v) {
    ensure(8);
    LONG_LE.set(bytes, length, v);
    length += 8;
  }

  void putFloatLE(float v) {
    putIntLE(Float.floatToRawIntBits(v));
  }

  void putDoubleLE(double v) {
    putLongLE(Double.doubleToRawLongBits(v));
  }

  /** Decimal digits of {@code v}. */
  void putLong(long v) {
    if (v == Long.MIN_VALUE) {
      putAscii(Long.toString(v));
      return;
    }
    ensure(20);
    if (v < 0) {
      bytes[length++] = '-';
      v = -v;
    }
    int digits = 1;
    for (long t = v; t >= 10; t /= 10) {
      digits++;
    }
    int at = length + digits;
    length = at;
    do {
      bytes[--at] = (byte) ('0' + v % 10);
      v /= 10;
    } while (v != 0);
  }
}
