package io.kiln.runtime.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.type.TypeReference;
import io.kiln.runtime.Futures;
import io.kiln.runtime.WireCodec;
import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Map;

/**
 * Every reply in the runtime: a value or an error. On one node both travel by reference (the caller gets
 * the very exception, stack trace included). Across nodes the value is CBOR encoded with the sender's
 * declared type and decoded lazily with the caller's, and the error through {@link ErrorCodecs}.
 */
final class ReplyMessage {

  private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {
  };

  private final Object value;
  private final Type valueType;
  private final byte[] encodedValue;
  private final Throwable error;

  private ReplyMessage(Object value, Type valueType, byte[] encodedValue, Throwable error) {
    this.value = value;
    this.valueType = valueType;
    this.encodedValue = encodedValue;
    this.error = error;
  }

  static ReplyMessage ok(Object value, Type type) {
    return new ReplyMessage(value, type, null, null);
  }

  static ReplyMessage failed(Throwable error) {
    return new ReplyMessage(null, null, null, Futures.unwrap(error));
  }

  boolean isError() {
    return error != null;
  }

  Throwable error() {
    return error;
  }

  /** The value, decoding it as {@code expected} if it came from another node. */
  Object value(Type expected) {
    if (encodedValue != null) {
      return WireValues.decodeValue(expected, encodedValue);
    }
    return value;
  }

  static final class Codec extends WireMessageCodec<ReplyMessage> {
    Codec() {
      super("kiln.reply");
    }

    @Override
    void encode(JsonGenerator gen, ReplyMessage m) throws IOException {
      gen.writeStartArray();
      if (m.error != null) {
        gen.writeBoolean(false);
        WireValues.write(gen, Map.class, ErrorCodecs.encode(m.error));
      } else {
        gen.writeBoolean(true);
        byte[] bytes = m.encodedValue != null ? m.encodedValue
            : WireValues.encodeValue(m.valueType == null ? Object.class : m.valueType, m.value);
        gen.writeBinary(bytes);
      }
      gen.writeEndArray();
    }

    @Override
    ReplyMessage decode(JsonParser p) throws IOException {
      p.nextToken();
      boolean ok = nextBoolean(p);
      if (ok) {
        p.nextToken();
        return new ReplyMessage(null, null, p.getBinaryValue(), null);
      }
      p.nextToken();
      Map<String, Object> err = WireCodec.cbor().readValue(p, MAP);
      return new ReplyMessage(null, null, null, ErrorCodecs.decode(err));
    }
  }
}
