package io.kiln.runtime.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JavaType;
import io.kiln.runtime.WireCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Type;

/** CBOR helpers of the runtime's message codecs: values written and read with their declared generic types. */
final class WireValues {

  private WireValues() {
  }

  static JavaType type(Type t) {
    return WireCodec.cbor().getTypeFactory().constructType(t);
  }

  static void write(JsonGenerator gen, Type type, Object value) throws IOException {
    if (value == null) {
      gen.writeNull();
    } else {
      WireCodec.cbor().writerFor(type(type)).writeValue(gen, value);
    }
  }

  static Object read(JsonParser parser, Type type) throws IOException {
    if (parser.nextToken() == JsonToken.VALUE_NULL) {
      return null;
    }
    return WireCodec.cbor().readerFor(type(type)).readValue(parser);
  }

  static byte[] encodeValue(Type type, Object value) {
    try {
      return WireCodec.cbor().writerFor(type(type)).writeValueAsBytes(value);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot encode " + type.getTypeName(), e);
    }
  }

  static Object decodeValue(Type type, byte[] bytes) {
    try {
      return WireCodec.cbor().readerFor(type(type)).readValue(bytes);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot decode " + type.getTypeName(), e);
    }
  }
}
