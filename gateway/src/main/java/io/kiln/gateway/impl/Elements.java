package io.kiln.gateway.impl;

import io.kiln.pools.HalfFloats;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import java.math.BigInteger;
import java.nio.ByteBuffer;

/**
 * Writes and reads single tensor elements in Kiln's raw layout (little-endian, row-major), with the range
 * checks that make a value that does not fit its datatype an input error rather than a silent wrap.
 */
final class Elements {

  private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

  private Elements() {
  }

  static void putBool(ByteBuffer out, boolean v) {
    out.put((byte) (v ? 1 : 0));
  }

  /** An integer element of an integer type; {@code where} names the element in errors. */
  static void putInteger(ByteBuffer out, DataType type, long v, String where) {
    switch (type) {
      case INT8 -> out.put((byte) checkRange(v, Byte.MIN_VALUE, Byte.MAX_VALUE, type, where));
      case INT16 -> out.putShort((short) checkRange(v, Short.MIN_VALUE, Short.MAX_VALUE, type, where));
      case INT32 -> out.putInt((int) checkRange(v, Integer.MIN_VALUE, Integer.MAX_VALUE, type, where));
      case INT64 -> out.putLong(v);
      case UINT8 -> out.put((byte) checkRange(v, 0, 0xff, type, where));
      case UINT16 -> out.putShort((short) checkRange(v, 0, 0xffff, type, where));
      case UINT32 -> out.putInt((int) checkRange(v, 0, 0xffffffffL, type, where));
      case UINT64 -> out.putLong(checkRange(v, 0, Long.MAX_VALUE, type, where));
      default -> throw new IllegalArgumentException(type + " is not an integer type");
    }
  }

  /** A UINT64 element given as its full unsigned value. */
  static void putUint64(ByteBuffer out, BigInteger v, String where) {
    if (v.signum() < 0 || v.compareTo(UINT64_MAX) > 0) {
      throw InferenceException.invalid(where + ": " + v + " is out of range for UINT64");
    }
    out.putLong(v.longValue());
  }

  /** A floating-point element of FP16, BF16, FP32 or FP64; a finite value the type cannot hold is an error. */
  static void putFloat(ByteBuffer out, DataType type, double v, String where) {
    switch (type) {
      case FP64 -> out.putDouble(v);
      case FP32 -> out.putFloat(checkFinite((float) v, v, type, where));
      case FP16 -> {
        short h = HalfFloats.toFp16((float) v);
        checkFinite(HalfFloats.fromFp16(h), v, type, where);
        out.putShort(h);
      }
      case BF16 -> {
        short b = HalfFloats.toBf16((float) v);
        checkFinite(HalfFloats.fromBf16(b), v, type, where);
        out.putShort(b);
      }
      default -> throw new IllegalArgumentException(type + " is not a floating-point type");
    }
  }

  static boolean isInteger(DataType t) {
    return switch (t) {
      case INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 -> true;
      default -> false;
    };
  }

  static boolean isFloat(DataType t) {
    return switch (t) {
      case FP16, BF16, FP32, FP64 -> true;
      default -> false;
    };
  }

  /** Reads an integer element as a long; UINT64 values above Long.MAX_VALUE come back negative (raw bits). */
  static long getInteger(ByteBuffer in, DataType type) {
    return switch (type) {
      case INT8 -> in.get();
      case INT16 -> in.getShort();
      case INT32 -> in.getInt();
      case INT64, UINT64 -> in.getLong();
      case UINT8 -> in.get() & 0xffL;
      case UINT16 -> in.getShort() & 0xffffL;
      case UINT32 -> in.getInt() & 0xffffffffL;
      default -> throw new IllegalArgumentException(type + " is not an integer type");
    };
  }

  static double getFloat(ByteBuffer in, DataType type) {
    return switch (type) {
      case FP64 -> in.getDouble();
      case FP32 -> in.getFloat();
      case FP16 -> HalfFloats.fromFp16(in.getShort());
      case BF16 -> HalfFloats.fromBf16(in.getShort());
      default -> throw new IllegalArgumentException(type + " is not a floating-point type");
    };
  }

  private static long checkRange(long v, long min, long max, DataType type, String where) {
    if (v < min || v > max) {
      throw InferenceException.invalid(where + ": " + v + " is out of range for " + type);
    }
    return v;
  }

  private static float checkFinite(float converted, double original, DataType type, String where) {
    if (Float.isInfinite(converted) && !Double.isInfinite(original)) {
      throw InferenceException.invalid(where + ": " + original + " is out of range for " + type);
    }
    return converted;
  }
}
