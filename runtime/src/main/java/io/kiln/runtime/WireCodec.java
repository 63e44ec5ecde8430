package io.kiln.runtime;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.cbor.databind.CBORMapper;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Kiln's explicit encodings: CBOR for arguments and results crossing nodes, JSON for records in the
 * shared stores, management payloads and event-bus records. Jackson modules on the classpath are
 * registered (so a module can teach it a value type); default typing stays off, so a message can never
 * name a class to instantiate. Unknown properties are ignored, so a newer Kiln's records still read.
 *
 * <p>Thread-safe: the mappers are shared and must not be reconfigured by callers.
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

  /** The CBOR mapper arguments and results of remote calls are encoded with. */
  public static ObjectMapper cbor() {
    return CBOR;
  }

  /** The JSON mapper used for shared-store records and management payloads. */
  public static ObjectMapper json() {
    return JSON;
  }

  /**
   * Encodes {@code value} as JSON text.
   *
   * @throws java.io.UncheckedIOException if Jackson cannot encode it
   */
  public static String toJson(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Decodes JSON text as {@code type}.
   *
   * @throws java.io.UncheckedIOException if the text is not JSON or does not read as {@code type} (the
   *     message quotes at most 200 characters of it)
   */
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
