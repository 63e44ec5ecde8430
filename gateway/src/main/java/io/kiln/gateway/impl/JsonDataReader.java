package io.kiln.gateway.impl;

import io.kiln.pools.HalfFloats;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import java.util.Arrays;

/**
 * One input's {@code data}, flat or nested (a scalar's also bare), into raw bytes: rectangular, agreeing with the
 * shape, no more elements than the shape holds, each in its datatype's range — exactly {@link JsonTensorReader}'s
 * checks, throwing {@link JsonScanner.Bail} where it would fail (the caller falls back to it for the message). One
 * per {@code data}; not thread-safe.
 */
final class JsonDataReader {
  private static final int ARRAYS = 1;
  private static final int VALUES = 2;

  private final JsonScanner s;
  private final DataType type;
  private final long[] shape;
  private final long expected;
  private final ByteSink out;
  // Nesting deeper than the shape's rank fails the shape check anyway, so that is all they need to hold.
  private final long[] dims;
  private final int[] kinds;
  private int rank;
  private long count;

  JsonDataReader(JsonScanner s, DataType type, long[] shape, long maxElements) {
    this.s = s;
    this.type = type;
    this.shape = shape;
    for (long d : shape) {
      if (d < 0) {
        throw JsonScanner.bail();
      }
    }
    this.expected = Tensor.elementCount(shape); // ArithmeticException on overflow: bails like any exception
    if (expected > maxElements) {
      throw JsonScanner.bail();
    }
    // Bounded by the body: at most (body + 1) / 2 elements of at most 8 bytes.
    int capacity = type == DataType.BYTES ? (int) Math.min(expected * 8, 1 << 16) : (int) (expected * type.byteSize());
    out = new ByteSink(capacity);
    dims = new long[Math.max(shape.length, 1)];
    kinds = new int[dims.length];
    Arrays.fill(dims, -1);
  }

  byte[] read() {
    if (s.peek() != '[') {
      if (shape.length != 0) {
        throw JsonScanner.bail();
      }
      element(); // a scalar's bare element ("data": 16000), as the two-pass decoders take it
    } else {
      s.expect('[');
      array(0);
    }
    if (rank > 1 && !Arrays.equals(dims, 0, rank, shape, 0, shape.length)) {
      throw JsonScanner.bail();
    }
    if (count != expected) {
      throw JsonScanner.bail();
    }
    return out.toArray();
  }

  /** After the array's '['. */
  private void array(int depth) {
    // Jackson counts the body's object, inputs, the input and data before this level; stay clear of its limit.
    if (depth + 8 > JsonRequestDecoder.MAX_NESTING_DEPTH || depth >= dims.length) {
      throw JsonScanner.bail();
    }
    long len = 0;
    if (!s.consume(']')) {
      do {
        if (s.consume('[')) {
          kind(depth, ARRAYS);
          array(depth + 1);
        } else {
          kind(depth, VALUES);
          element();
        }
        len++;
      } while (s.more(']'));
    }
    if (depth >= rank) {
      rank = depth + 1;
    }
    if (dims[depth] < 0) {
      dims[depth] = len;
    } else if (dims[depth] != len) {
      throw JsonScanner.bail();
    }
  }

  private void kind(int depth, int kind) {
    if (kinds[depth] == 0) {
      kinds[depth] = kind;
    } else if (kinds[depth] != kind) {
      throw JsonScanner.bail();
    }
  }

  private void element() {
    if (count == expected) {
      throw JsonScanner.bail();
    }
    switch (type) {
      case FP32 -> {
        s.number();
        float f = (float) s.numberDouble;
        if (Float.isInfinite(f) && !Double.isInfinite(s.numberDouble)) {
          throw JsonScanner.bail();
        }
        out.putFloatLE(f);
      }
      case FP64 -> {
        s.number();
        out.putDoubleLE(s.numberDouble);
      }
      case FP16, BF16 -> {
        s.number();
        // As Elements.putFloat: a finite value the half type cannot hold is an error.
        double v = s.numberDouble;
        short h = type == DataType.FP16 ? HalfFloats.toFp16((float) v) : HalfFloats.toBf16((float) v);
        float back = type == DataType.FP16 ? HalfFloats.fromFp16(h) : HalfFloats.fromBf16(h);
        if (Float.isInfinite(back) && !Double.isInfinite(v)) {
          throw JsonScanner.bail();
        }
        out.putShortLE(h);
      }
      case BOOL -> out.put((byte) (s.bool() ? 1 : 0));
      case BYTES -> {
        if (s.peek() != '"') {
          throw JsonScanner.bail();
        }
        s.stringInto(out);
      }
      default -> {
        s.number();
        if (!s.numberIsInt) {
          throw JsonScanner.bail();
        }
        integer(s.numberLong);
      }
    }
    count++;
  }

  private void integer(long v) {
    switch (type) {
      case INT8 -> out.put((byte) range(v, Byte.MIN_VALUE, Byte.MAX_VALUE));
      case INT16 -> out.putShortLE((short) range(v, Short.MIN_VALUE, Short.MAX_VALUE));
      case INT32 -> out.putIntLE((int) range(v, Integer.MIN_VALUE, Integer.MAX_VALUE));
      case INT64 -> out.putLongLE(v);
      case UINT8 -> out.put((byte) range(v, 0, 0xff));
      case UINT16 -> out.putShortLE((short) range(v, 0, 0xffff));
      case UINT32 -> out.putIntLE((int) range(v, 0, 0xffffffffL));
      case UINT64 -> out.putLongLE(range(v, 0, Long.MAX_VALUE));
      default -> throw new IllegalStateException(type + " is not an integer type");
    }
  }

  private static long range(long v, long min, long max) {
    if (v < min || v > max) {
      throw JsonScanner.bail();
    }
    return v;
  }
}
