package io.kiln.gateway.impl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import io.kiln.gateway.ModelInfo;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.TensorSpec;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Writes OIP JSON documents: inference responses (flat {@code data}, or binary tensor extension outputs
 * after the JSON header; written straight into the response bytes by {@link InferResponseWriter}), model and
 * server metadata, and errors (streamed with Jackson). Thread-safe.
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
    return InferResponseWriter.write(response, binaryOutputs);
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
}
