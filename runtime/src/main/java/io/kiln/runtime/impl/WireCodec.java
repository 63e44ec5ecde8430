package io.kiln.runtime.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.cbor.databind.CBORMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Type;

/**
 * Kiln's explicit encodings: CBOR for arguments and results crossing nodes, JSON for records in the
 * shared maps. Jackson modules on the classpath are registered (so a module can teach it a value type);
 * default typing stays off, so a message can never name a class to instantiate.
 */
public final class WireCodec {

  /** Upper bound on one encoded message, checked before decoding. */
  public static final int MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

  private static final ObjectMapper CBOR = configure(CBORMapper.builder().findAndAddModules().build());
  private static final ObjectMapper JSON = configure(JsonMapper.builder().findAndAddModules().build());

  private WireCodec() {
  }

  private static ObjectMapper configure(ObjectMapper m) {
    m.disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);
    m.disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    return m;
  }

  public static ObjectMapper cbor() {
    return CBOR;
  }

  /** The JSON mapper used for shared-map records and management payloads. */
  public static ObjectMapper json() {
    return JSON;
  }

  static JavaType type(Type t) {
    return CBOR.getTypeFactory().constructType(t);
  }

  static void write(JsonGenerator gen, Type type, Object value) throws IOException {
    if (value == null) {
      gen.writeNull();
    } else {
      CBOR.writerFor(type(type)).writeValue(gen, value);
    }
  }

  static Object read(JsonParser parser, Type type) throws IOException {
    if (parser.nextToken() == com.fasterxml.jackson.core.JsonToken.VALUE_NULL) {
      return null;
    }
    return CBOR.readerFor(type(type)).readValue(parser);
  }

  static byte[] encodeValue(Type type, Object value) {
    try {
      return CBOR.writerFor(type(type)).writeValueAsBytes(value);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot encode " + type.getTypeName(), e);
    }
  }

  static Object decodeValue(Type type, byte[] bytes) {
    try {
      return CBOR.readerFor(type(type)).readValue(bytes);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot decode " + type.getTypeName(), e);
    }
  }

  public static String toJson(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static <T> T fromJson(String json, Class<T> type) {
    try {
      return JSON.readValue(json, type);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot decode " + type.getSimpleName() + " from " + abbreviate(json), e);
    }
  }

  private static String abbreviate(String s) {
    return s.length() > 200 ? s.substring(0, 200) + "..." : s;
  }
}
