package io.kiln.control.impl;

import io.vertx.core.MultiMap;
import java.util.Map;

/**
 * Checks a request's query parameters against the names it accepts, each with its longest value: an unknown name,
 * a repeated one or a value too long or with a character outside printable ASCII is refused with a message naming
 * the parameter (the caller answers 400 with it).
 */
public final class QueryParams {

  /** Longest query string read at all. */
  static final int MAX_QUERY_CHARS = 2048;

  private QueryParams() {
  }

  /** @return null if every parameter is acceptable, else why not */
  public static String check(String rawQuery, MultiMap params, Map<String, Integer> accepted) {
    if (rawQuery != null && rawQuery.length() > MAX_QUERY_CHARS) {
      return "query string longer than " + MAX_QUERY_CHARS + " characters";
    }
    for (String name : params.names()) {
      Integer max = accepted.get(name);
      if (max == null) {
        return "unknown query parameter '" + clip(name) + "'"
            + (accepted.isEmpty() ? "; this resource takes none" : "; expected " + String.join(", ", accepted.keySet()));
      }
      if (params.getAll(name).size() > 1) {
        return "query parameter '" + name + "' given more than once";
      }
      String value = params.get(name);
      if (value.length() > max) {
        return "query parameter '" + name + "' is longer than " + max + " characters";
      }
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i);
        if (c < 0x21 || c > 0x7e) {
          return "query parameter '" + name + "' may hold printable ASCII only (no spaces)";
        }
      }
    }
    return null;
  }

  private static String clip(String s) {
    String visible = s.replaceAll("[^\\x21-\\x7e]", "?");
    return visible.length() > 40 ? visible.substring(0, 40) + "…" : visible;
  }
}
