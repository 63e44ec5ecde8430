package io.kiln.gateway.impl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import io.kiln.gateway.ModelInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Writes OIP JSON documents: inference responses (flat {@code data}, or binary tensor extension outputs
 * after the JSON header), model and server metadata, and errors. Streams with Jackson, so large outputs
 * are not boxed. Thread-safe.
 */
final class JsonResponseEncoder {

  /**
   * An encoded response.
   *
   * @param body JSON, then the binary outputs if any
   * @param jsonLength bytes of JSON at the start of the body (the {@code Inference-Header-Content-Length})
   * @param binary whether binary outputs follow the JSON
   */
  record Encoded(Buffer body, int jsonLength, boolean binary) {
  }

  private final JsonFactory factory;

  JsonResponseEncoder(JsonFactory factory) {
    this.factory = factory;
  }

  /**
   * @param binaryOutputs which outputs (by name) to send as binary data
   */
  Encoded infer(InferenceResponse response, Predicate<String> binaryOutputs) {
    List<byte[]> binaries = new ArrayList<>();
    byte[] json = write(g -> {
      g.writeStartObject();
      g.writeStringField("model_name", response.modelName());
      g.writeStringField("model_version", response.modelVersion());
      if (!response.id().isEmpty()) {
        g.writeStringField("id", response.id());
      }
      g.writeFieldName("parameters");
      parameters(g, response.parameters());
      g.writeArrayFieldStart("outputs");
      for (Tensor t : response.outputs()) {
        g.writeStartObject();
        g.writeStringField("name", t.name());
        g.writeStringField("datatype", t.datatype().name());
        g.writeFieldName("shape");
        g.writeArray(t.shape(), 0, t.shape().length);
        if (binaryOutputs.test(t.name())) {
          g.writeObjectFieldStart("parameters");
          g.writeNumberField(Fields.BINARY_DATA_SIZE, t.data().length);
          g.writeEndObject();
          binaries.add(t.data());
        } else {
          g.writeFieldName("data");
          data(g, t);
        }
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
    });
    if (binaries.isEmpty()) {
      return new Encoded(Buffer.buffer(json), json.length, false);
    }
    long total = json.length;
    for (byte[] b : binaries) {
      total += b.length;
    }
    Buffer body = Buffer.buffer(Math.toIntExact(total)).appendBytes(json);
    for (byte[] b : binaries) {
      body.appendBytes(b);
    }
    return new Encoded(body, json.length, true);
  }

  Buffer serverMetadata(String name, String version, Collection<String> extensions) {
    return Buffer.buffer(write(g -> {
      g.writeStartObject();
      g.writeStringField("name", name);
      g.writeStringField("version", version);
      g.writeArrayFieldStart("extensions");
      for (String e : extensions) {
        g.writeString(e);
      }
      g.writeEndArray();
      g.writeEndObject();
    }));
  }

  Buffer modelMetadata(ModelInfo m) {
    return Buffer.buffer(write(g -> {
      g.writeStartObject();
      g.writeStringField("name", m.name());
      g.writeArrayFieldStart("versions");
      for (String v : m.versions()) {
        g.writeString(v);
      }
      g.writeEndArray();
      g.writeStringField("platform", m.platform());
      g.writeFieldName("inputs");
      specs(g, m.inputs());
      g.writeFieldName("outputs");
      specs(g, m.outputs());
      g.writeEndObject();
    }));
  }

  /** A flat object of string, number and boolean fields. */
  Buffer object(Map<String, Object> fields) {
    return Buffer.buffer(write(g -> parameters(g, fields)));
  }

  private interface Body {
    void write(JsonGenerator g) throws IOException;
  }

  private byte[] write(Body body) {
    try (ByteArrayBuilder out = new ByteArrayBuilder(); JsonGenerator g = factory.createGenerator(out)) {
      body.write(g);
      g.flush();
      return out.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void specs(JsonGenerator g, List<TensorSpec> specs) throws IOException {
    g.writeStartArray();
    for (TensorSpec s : specs) {
      g.writeStartObject();
      g.writeStringField("name", s.name());
      g.writeStringField("datatype", s.datatype().name());
      long[] shape = s.shape();
      g.writeFieldName("shape");
      g.writeArray(shape, 0, shape.length);
      g.writeEndObject();
    }
    g.writeEndArray();
  }

  static void parameters(JsonGenerator g, Map<String, Object> params) throws IOException {
    g.writeStartObject();
    for (Map.Entry<String, Object> e : params.entrySet()) {
      g.writeFieldName(e.getKey());
      Object v = e.getValue();
      if (v instanceof Boolean b) {
        g.writeBoolean(b);
      } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
        g.writeNumber(((Number) v).longValue());
      } else if (v instanceof BigInteger b) {
        g.writeNumber(b);
      } else if (v instanceof Number n) {
        g.writeNumber(n.doubleValue());
      } else {
        g.writeString(String.valueOf(v));
      }
    }
    g.writeEndObject();
  }

  private static void data(JsonGenerator g, Tensor t) throws IOException {
    DataType type = t.datatype();
    g.writeStartArray();
    if (type == DataType.BYTES) {
      for (byte[] e : BinaryTensors.splitBytesElements(t.data())) {
        g.writeString(new String(e, StandardCharsets.UTF_8));
      }
    } else {
      ByteBuffer in = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
      long n = t.data().length / type.byteSize();
      for (long i = 0; i < n; i++) {
        switch (type) {
          case BOOL -> g.writeBoolean(in.get() != 0);
          case FP32 -> g.writeNumber(in.getFloat());
          case FP64 -> g.writeNumber(in.getDouble());
          case FP16, BF16 -> g.writeNumber((float) Elements.getFloat(in, type));
          case UINT64 -> {
            long v = in.getLong();
            if (v >= 0) {
              g.writeNumber(v);
            } else {
              g.writeNumber(Long.toUnsignedString(v));
            }
          }
          default -> g.writeNumber(Elements.getInteger(in, type));
        }
      }
    }
    g.writeEndArray();
  }
}
