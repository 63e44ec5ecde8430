package io.kiln.gateway.impl;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Map;

/**
 * Typed reads of an OpenAI request body's fields, each refusal an {@link OpenAiError} naming the field. A field that
 * is absent or JSON {@code null} reads as absent (OpenAI's clients send nulls for unset optional fields); a field
 * this API does not know is never read, so it is ignored as OpenAI's servers ignore it. Stateless.
 */
final class OpenAiFields {

  private OpenAiFields() {
  }

  /** The body as a JSON object, or 400 (no {@code param}: the body as a whole is wrong). */
  static JsonObject object(Buffer body) {
    if (body == null || body.length() == 0) {
      throw OpenAiError.invalid(null, "the request body is empty; expected a JSON object");
    }
    try {
      return new JsonObject(body);
    } catch (DecodeException | ClassCastException e) {
      throw OpenAiError.invalid(null, "the request body is not a JSON object: " + e.getMessage());
    }
  }

  /** The required, non-empty {@code model}. */
  static String model(JsonObject json) {
    Object v = json.getValue("model");
    if (v == null) {
      throw OpenAiError.invalid("model", "required: the id of the model to use (GET /v1/models lists them)");
    }
    if (!(v instanceof String s) || s.isEmpty()) {
      throw OpenAiError.invalid("model", "must be a non-empty string");
    }
    return s;
  }

  static String string(JsonObject json, String field) {
    Object v = json.getValue(field);
    if (v == null || v instanceof String) {
      return (String) v;
    }
    throw OpenAiError.invalid(field, "must be a string");
  }

  static Boolean bool(JsonObject json, String field) {
    Object v = json.getValue(field);
    if (v == null || v instanceof Boolean) {
      return (Boolean) v;
    }
    throw OpenAiError.invalid(field, "must be true or false");
  }

  /** An integer in {@code [min, max]}, or null when absent; a number with a fraction is refused. */
  static Long integer(JsonObject json, String field, long min, long max) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    long n;
    if (v instanceof Integer || v instanceof Long) {
      n = ((Number) v).longValue();
    } else if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) < 0x1p53) {
      n = d.longValue(); // 16.0: what some clients make of an integer
    } else if (v instanceof BigInteger || v instanceof BigDecimal || v instanceof Double) {
      throw OpenAiError.invalid(field, "must be an integer in " + min + ".." + max + ", got " + v);
    } else {
      throw OpenAiError.invalid(field, "must be an integer");
    }
    if (n < min || n > max) {
      throw OpenAiError.invalid(field, "must be in " + min + ".." + max + ", got " + n);
    }
    return n;
  }

  /**
   * A number in {@code [min, max]} (above {@code min} when {@code minExclusive}), or null when absent.
   */
  static Double number(JsonObject json, String field, double min, double max, boolean minExclusive) {
    Object v = json.getValue(field);
    if (v == null) {
      return null;
    }
    if (!(v instanceof Number n)) {
      throw OpenAiError.invalid(field, "must be a number");
    }
    double d = n.doubleValue();
    if (!Double.isFinite(d) || d > max || (minExclusive ? d <= min : d < min)) {
      throw OpenAiError.invalid(field, "must be in " + (minExclusive ? "(" : "[") + fmt(min) + ", " + fmt(max)
          + "], got " + v);
    }
    return d;
  }

  private static String fmt(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  static JsonArray array(JsonObject json, String field) {
    Object v = json.getValue(field);
    if (v == null || v instanceof JsonArray) {
      return (JsonArray) v;
    }
    throw OpenAiError.invalid(field, "must be an array");
  }

  static JsonObject object(JsonObject json, String field) {
    Object v = json.getValue(field);
    if (v == null || v instanceof JsonObject) {
      return (JsonObject) v;
    }
    throw OpenAiError.invalid(field, "must be an object");
  }

  /**
   * Refuses a field that asks for a feature Kiln does not have: absent, null and {@code defaults} pass (the values
   * OpenAI's clients send when the feature is off); a value of another type is malformed; any other is unsupported.
   */
  static void onlyDefault(JsonObject json, String field, String what, Object... defaults) {
    Object v = json.getValue(field);
    if (v == null) {
      return;
    }
    for (Object d : defaults) {
      if (same(v, d)) {
        return;
      }
    }
    if (defaults.length > 0 && !sameKind(v, defaults[0])) {
      throw OpenAiError.invalid(field, "must be " + kind(defaults[0]));
    }
    throw OpenAiError.unsupported(field, what);
  }

  /** Refuses a non-zero penalty; zero (OpenAI's default) passes, a value outside [-2, 2] is malformed. */
  static void zeroPenalty(JsonObject json, String field) {
    Double d = number(json, field, -2, 2, false);
    if (d != null && d != 0) {
      throw OpenAiError.unsupported(field, "a non-zero penalty");
    }
  }

  private static boolean same(Object v, Object d) {
    if (v instanceof Number a && d instanceof Number b) {
      return a.doubleValue() == b.doubleValue();
    }
    if (v instanceof JsonArray a && d instanceof JsonArray b) {
      return a.isEmpty() && b.isEmpty();
    }
    if (v instanceof JsonObject a && d instanceof Map<?, ?> b) {
      return a.isEmpty() && b.isEmpty();
    }
    return v.equals(d);
  }

  private static boolean sameKind(Object v, Object d) {
    return v instanceof Number ? d instanceof Number
        : v instanceof JsonArray ? d instanceof JsonArray
        : v instanceof JsonObject ? d instanceof Map<?, ?>
        : v.getClass() == d.getClass();
  }

  private static String kind(Object d) {
    return d instanceof Number ? "a number" : d instanceof Boolean ? "true or false"
        : d instanceof JsonArray ? "an array" : d instanceof Map<?, ?> ? "an object" : "a string";
  }
}
