package io.kiln.gateway.impl;

import io.kiln.pools.HalfFloats;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.core.io.schubfach.DoubleToDecimal;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Writes an OIP JSON inference response straight into the bytes the HTTP response sends: no generator, no
 * intermediate array, binary outputs appended without a copy. The text is byte for byte what the gateway's
 * Jackson generator wrote (no whitespace; Jackson's escaping; numbers as its fast writer prints them:
 * the shortest decimal that reads back as the same float or double, {@code Float.toString} layout; NaN and
 * infinities as strings), so floats round-trip exactly. Stateless and thread-safe.
 */
final class InferResponseWriter {

  private static final VarHandle SHORT_LE = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private static final JsonFactory STRINGS = new JsonFactory();

  private InferResponseWriter() {
  }

  /**
   * @param binaryOutputs which outputs (by name) to send as binary data after the JSON
   */
  static JsonResponseEncoder.Encoded write(InferenceResponse response, Predicate<String> binaryOutputs) {
    return write(response, binaryOutputs, Map.of());
  }

  /**
   * @param binaryOutputs which outputs (by name) to send as binary data after the JSON
   * @param shared the outputs already written into shared memory (by name): sent with their window in
   *     {@code parameters} and no data
   */
  static JsonResponseEncoder.Encoded write(InferenceResponse response, Predicate<String> binaryOutputs,
                                           Map<String, SharedMemoryTensors.Written> shared) {
    ByteSink out = new ByteSink(estimate(response, binaryOutputs, shared));
    List<byte[]> binaries = null;
    out.putAscii("{\"model_name\":");
    string(out, response.modelName());
    out.putAscii(",\"model_version\":");
    string(out, response.modelVersion());
    if (!response.id().isEmpty()) {
      out.putAscii(",\"id\":");
      string(out, response.id());
    }
    out.putAscii(",\"parameters\":");
    parameters(out, response.parameters());
    out.putAscii(",\"outputs\":[");
    boolean first = true;
    for (Tensor t : response.outputs()) {
      out.putAscii(first ? "{\"name\":" : ",{\"name\":");
      first = false;
      string(out, t.name());
      out.putAscii(",\"datatype\":\"");
      out.putAscii(t.datatype().name());
      out.putAscii("\",\"shape\":[");
      long[] shape = t.shape();
      for (int i = 0; i < shape.length; i++) {
        if (i > 0) {
          out.put((byte) ',');
        }
        out.putLong(shape[i]);
      }
      out.put((byte) ']');
      SharedMemoryTensors.Written inShared = shared.isEmpty() ? null : shared.get(t.name());
      if (inShared != null) {
        out.putAscii(",\"parameters\":{\"" + SharedMemoryTensors.REGION + "\":");
        string(out, inShared.region());
        out.putAscii(",\"" + SharedMemoryTensors.BYTE_SIZE + "\":");
        out.putLong(inShared.byteSize());
        out.putAscii("}}");
      } else if (binaryOutputs.test(t.name())) {
        out.putAscii(",\"parameters\":{\"" + Fields.BINARY_DATA_SIZE + "\":");
        out.putLong(t.data().length);
        out.putAscii("}}");
        if (binaries == null) {
          binaries = new ArrayList<>(2);
        }
        binaries.add(t.data());
      } else {
        out.putAscii(",\"data\":[");
        data(out, t);
        out.putAscii("]}");
      }
    }
    out.putAscii("]}");
    int jsonLength = out.length();
    ByteBuf json = Unpooled.wrappedBuffer(out.array(), 0, jsonLength);
    if (binaries == null) {
      return new JsonResponseEncoder.Encoded(BufferInternal.buffer(json), jsonLength, false);
    }
    // Tensor bytes are immutable by contract: the body refers to them rather than copying.
    ByteBuf[] parts = new ByteBuf[binaries.size() + 1];
    parts[0] = json;
    for (int i = 0; i < binaries.size(); i++) {
      parts[i + 1] = Unpooled.wrappedBuffer(binaries.get(i));
    }
    Buffer body = BufferInternal.buffer(Unpooled.wrappedBuffer(parts.length, parts));
    return new JsonResponseEncoder.Encoded(body, jsonLength, true);
  }

  /**
   * Bytes the JSON will take, near enough that the sink rarely grows. Outputs sent as binary data or in shared memory
   * add only their header: sized as text, an 8 MB output made this a 16 MB array for a JSON of a few hundred bytes.
   */
  private static int estimate(InferenceResponse r, Predicate<String> binaryOutputs,
                              Map<String, SharedMemoryTensors.Written> shared) {
    long n = 128 + r.modelName().length() + r.modelVersion().length() + r.id().length() + 32L * r.parameters().size();
    for (Tensor t : r.outputs()) {
      if (binaryOutputs.test(t.name()) || shared.containsKey(t.name())) {
        n += 160 + t.name().length() + 21L * t.shape().length;
        continue;
      }
      DataType type = t.datatype();
      long elements = type == DataType.BYTES ? t.data().length : t.data().length / type.byteSize();
      int perElement = switch (type) {
        case FP32, FP16, BF16 -> 16;
        case FP64, INT64, UINT64 -> 25;
        case BYTES -> 2;
        default -> 12;
      };
      n += 96 + t.name().length() + elements * perElement;
    }
    return (int) Math.min(n, 1 << 24);
  }

  private static void data(ByteSink out, Tensor t) {
    DataType type = t.datatype();
    byte[] in = t.data();
    if (type == DataType.BYTES) {
      int pos = 0;
      boolean first = true;
      while (pos < in.length) {
        int len = (int) INT_LE.get(in, pos);
        if (len < 0 || len > in.length - pos - 4) {
          throw new IllegalStateException("BYTES tensor element at offset " + pos + " overruns its data");
        }
        if (!first) {
          out.put((byte) ',');
        }
        first = false;
        bytesElement(out, in, pos + 4, len);
        pos += 4 + len;
      }
      if (pos != in.length) {
        throw new IllegalStateException("BYTES tensor data truncated at offset " + pos);
      }
      return;
    }
    int size = type.byteSize();
    for (int at = 0; at < in.length; at += size) {
      if (at > 0) {
        out.put((byte) ',');
      }
      switch (type) {
        case BOOL -> out.putAscii(in[at] != 0 ? "true" : "false");
        case FP32 -> putFloat(out, Float.intBitsToFloat((int) INT_LE.get(in, at)));
        case FP64 -> putDouble(out, Double.longBitsToDouble((long) LONG_LE.get(in, at)));
        case FP16 -> putFloat(out, HalfFloats.fromFp16((short) SHORT_LE.get(in, at)));
        case BF16 -> putFloat(out, HalfFloats.fromBf16((short) SHORT_LE.get(in, at)));
        case INT8 -> out.putLong(in[at]);
        case UINT8 -> out.putLong(in[at] & 0xffL);
        case INT16 -> out.putLong((short) SHORT_LE.get(in, at));
        case UINT16 -> out.putLong((short) SHORT_LE.get(in, at) & 0xffffL);
        case INT32 -> out.putLong((int) INT_LE.get(in, at));
        case UINT32 -> out.putLong((int) INT_LE.get(in, at) & 0xffffffffL);
        case INT64 -> out.putLong((long) LONG_LE.get(in, at));
        case UINT64 -> {
          long v = (long) LONG_LE.get(in, at);
          if (v >= 0) {
            out.putLong(v);
          } else {
            out.putAscii(Long.toUnsignedString(v));
          }
        }
        default -> throw new IllegalStateException("unreachable: " + type);
      }
    }
  }

  /** As Jackson's generator with its fast writer: the shortest repr; NaN and infinities as strings. */
  static void putFloat(ByteSink out, float f) {
    if (Float.isFinite(f)) {
      FloatFormat.put(out, f);
    } else {
      out.put((byte) '"');
      out.putAscii(Float.toString(f));
      out.put((byte) '"');
    }
  }

  static void putDouble(ByteSink out, double d) {
    if (Double.isFinite(d)) {
      out.putAscii(DoubleToDecimal.toString(d));
    } else {
      out.put((byte) '"');
      out.putAscii(Double.toString(d));
      out.put((byte) '"');
    }
  }

  private static void parameters(ByteSink out, Map<String, Object> params) {
    out.put((byte) '{');
    boolean first = true;
    for (Map.Entry<String, Object> e : params.entrySet()) {
      if (!first) {
        out.put((byte) ',');
      }
      first = false;
      string(out, e.getKey());
      out.put((byte) ':');
      Object v = e.getValue();
      if (v instanceof Boolean b) {
        out.putAscii(b ? "true" : "false");
      } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
        out.putLong(((Number) v).longValue());
      } else if (v instanceof BigInteger b) {
        out.putAscii(b.toString());
      } else if (v instanceof Number n) {
        putDouble(out, n.doubleValue());
      } else {
        string(out, String.valueOf(v));
      }
    }
    out.put((byte) '}');
  }

  /** A JSON string: printable ASCII as is, anything else escaped and encoded as Jackson does. */
  static void string(ByteSink out, String s) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
        out.put(jacksonString(s));
        return;
      }
    }
    out.ensure(n + 2);
    out.put((byte) '"');
    out.putAscii(s);
    out.put((byte) '"');
  }

  /** Rare (escapes, non-ASCII): Jackson's generator itself, whose escaping differs from its JsonStringEncoder's. */
  private static byte[] jacksonString(String s) {
    try (ByteArrayBuilder b = new ByteArrayBuilder(s.length() + 16); JsonGenerator g = STRINGS.createGenerator(b)) {
      g.writeString(s);
      g.flush();
      return b.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void bytesElement(ByteSink out, byte[] in, int from, int len) {
    for (int i = from; i < from + len; i++) {
      byte c = in[i];
      if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
        // Not plain ASCII (negative bytes are UTF-8 sequences): decoded and escaped as before.
        string(out, new String(in, from, len, java.nio.charset.StandardCharsets.UTF_8));
        return;
      }
    }
    out.put((byte) '"');
    out.put(in, from, len);
    out.put((byte) '"');
  }
}
