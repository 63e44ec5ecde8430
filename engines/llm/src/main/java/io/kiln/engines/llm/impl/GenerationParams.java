package io.kiln.engines.llm.impl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.InferenceException;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * A generation request's settings, read leniently from its protocol parameters (numbers may come as Long, Double or
 * text, as the OIP decoders leave them); parameters this engine does not know are ignored.
 *
 * @param maxTokens the most tokens to generate, if the request limits them
 * @param temperature 0: greedy
 * @param topP the nucleus' probability mass, in (0, 1]
 * @param topK sample among the k most likely tokens, 0: all
 * @param seed the sampler's seed, if the request fixes it
 * @param stop stop strings (at most {@value #MAX_STOPS}, none empty)
 * @param ignoreEos whether generation goes on past the end-of-sequence token
 * @param chat whether the prompt is a JSON array of messages for the chat template
 */
record GenerationParams(OptionalInt maxTokens, double temperature, double topP, int topK, OptionalLong seed,
                        List<String> stop, boolean ignoreEos, boolean chat) {

  static final int MAX_STOPS = 4;
  private static final ObjectMapper JSON = new ObjectMapper();

  /** @throws InferenceException INVALID_INPUT naming the first parameter that is wrong */
  static GenerationParams of(Map<String, Object> p) {
    OptionalInt maxTokens = OptionalInt.empty();
    if (p.get(TextModels.MAX_TOKENS) != null) {
      long n = integer(p, TextModels.MAX_TOKENS);
      if (n < 1) {
        throw invalid(TextModels.MAX_TOKENS, "must be at least 1, got " + n);
      }
      maxTokens = OptionalInt.of((int) Math.min(Integer.MAX_VALUE, n));
    }
    double temperature = number(p, TextModels.TEMPERATURE, 1.0);
    if (!(temperature >= 0) || Double.isInfinite(temperature)) {
      throw invalid(TextModels.TEMPERATURE, "must be a number >= 0, got " + p.get(TextModels.TEMPERATURE));
    }
    double topP = number(p, TextModels.TOP_P, 1.0);
    if (!(topP > 0 && topP <= 1)) {
      throw invalid(TextModels.TOP_P, "must be in (0, 1], got " + p.get(TextModels.TOP_P));
    }
    long topK = p.get(TextModels.TOP_K) == null ? 0 : integer(p, TextModels.TOP_K);
    if (topK < -1) { // -1 is vLLM's "all", as 0 is here
      throw invalid(TextModels.TOP_K, "must be >= 0 (0: all tokens), got " + topK);
    }
    OptionalLong seed = p.get(TextModels.SEED) == null ? OptionalLong.empty()
        : OptionalLong.of(integer(p, TextModels.SEED));
    boolean chat = format(p.get(TextModels.INPUT_FORMAT));
    return new GenerationParams(maxTokens, temperature, topP, (int) Math.max(0, Math.min(topK, Integer.MAX_VALUE)),
        seed, stops(p.get(TextModels.STOP)), bool(p, TextModels.IGNORE_EOS), chat);
  }

  private static boolean format(Object v) {
    if (v == null) {
      return false;
    }
    String f = v.toString().trim().toLowerCase(Locale.ROOT);
    if (f.equals(TextModels.FORMAT_CHAT)) {
      return true;
    }
    if (f.equals(TextModels.FORMAT_TEXT) || f.isEmpty()) {
      return false;
    }
    throw invalid(TextModels.INPUT_FORMAT, "must be " + TextModels.FORMAT_TEXT + " or " + TextModels.FORMAT_CHAT
        + ", got '" + v + "'");
  }

  private static List<String> stops(Object v) {
    if (v == null) {
      return List.of();
    }
    List<String> stops = new ArrayList<>();
    if (v instanceof List<?> list) {
      list.forEach(e -> stops.add(String.valueOf(e)));
    } else if (v instanceof String s && s.trim().startsWith("[")) {
      try {
        JsonNode array = JSON.readTree(s);
        for (JsonNode e : array) {
          if (!e.isTextual()) {
            throw invalid(TextModels.STOP, "must be a string or a JSON array of strings, got " + s);
          }
          stops.add(e.asText());
        }
      } catch (JsonProcessingException e) {
        throw invalid(TextModels.STOP, "is not a JSON array of strings: " + e.getOriginalMessage());
      }
    } else if (v instanceof String s) {
      if (s.isEmpty()) {
        return List.of();
      }
      stops.add(s);
    } else {
      throw invalid(TextModels.STOP, "must be a string or a JSON array of strings, got " + v);
    }
    if (stops.size() > MAX_STOPS) {
      throw invalid(TextModels.STOP, "takes at most " + MAX_STOPS + " strings, got " + stops.size());
    }
    if (stops.stream().anyMatch(String::isEmpty)) {
      throw invalid(TextModels.STOP, "must not hold an empty string");
    }
    return List.copyOf(stops);
  }

  private static long integer(Map<String, Object> p, String name) {
    Object v = p.get(name);
    double d;
    if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue();
    } else if (v instanceof Number n) {
      d = n.doubleValue();
    } else if (v instanceof String s) {
      try {
        return Long.parseLong(s.trim());
      } catch (NumberFormatException e) {
        d = parse(name, s);
      }
    } else {
      throw invalid(name, "must be an integer, got " + v);
    }
    if (d != Math.rint(d) || Double.isInfinite(d) || Math.abs(d) > 9.0e15) {
      throw invalid(name, "must be an integer, got " + v);
    }
    return (long) d;
  }

  private static double number(Map<String, Object> p, String name, double dflt) {
    Object v = p.get(name);
    if (v == null) {
      return dflt;
    }
    if (v instanceof Number n) {
      return n.doubleValue();
    }
    if (v instanceof String s) {
      return parse(name, s);
    }
    throw invalid(name, "must be a number, got " + v);
  }

  private static double parse(String name, String s) {
    try {
      double d = Double.parseDouble(s.trim());
      if (Double.isFinite(d)) {
        return d;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw invalid(name, "must be a number, got '" + s + "'");
  }

  private static boolean bool(Map<String, Object> p, String name) {
    Object v = p.get(name);
    if (v == null) {
      return false;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    String s = v.toString().trim().toLowerCase(Locale.ROOT);
    if (s.equals("true") || s.equals("false")) {
      return Boolean.parseBoolean(s);
    }
    throw invalid(name, "must be true or false, got " + v);
  }

  static InferenceException invalid(String parameter, String message) {
    return InferenceException.invalid(parameter + ": " + message);
  }
}
