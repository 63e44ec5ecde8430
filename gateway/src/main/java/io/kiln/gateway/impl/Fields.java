package io.kiln.gateway.impl;

import io.kiln.pools.InferenceException;
import java.math.BigInteger;
import java.util.Map;

/** The protocol parameters Kiln interprets, read with type checks that name the offending field. */
final class Fields {

  static final String BINARY_DATA_SIZE = "binary_data_size";
  static final String BINARY_DATA = "binary_data";
  static final String BINARY_DATA_OUTPUT = "binary_data_output";
  static final String NODE_ID = "node_id";
  static final String DATA_KEY = "data_key";
  static final String TIMEOUT_MS = "timeout_ms";
  static final String CLASSIFICATION = "classification";
  static final String KILN_NODE = "kiln_node";

  private Fields() {
  }

  /** The paths of the first inputs and outputs, made once: every request names them on its way. */
  private static final String[] INPUT_PATHS = paths("inputs", 16);
  private static final String[] OUTPUT_PATHS = paths("outputs", 16);

  private static String[] paths(String field, int n) {
    String[] p = new String[n];
    for (int i = 0; i < n; i++) {
      p[i] = field + "[" + i + "]";
    }
    return p;
  }

  static String inputPath(int index) {
    return index < INPUT_PATHS.length ? INPUT_PATHS[index] : "inputs[" + index + "]";
  }

  static String outputPath(int index) {
    return index < OUTPUT_PATHS.length ? OUTPUT_PATHS[index] : "outputs[" + index + "]";
  }

  /** A boolean parameter, or null when absent. */
  static Boolean bool(Map<String, Object> params, String key, String path) {
    Object v = params.get(key);
    if (v == null) {
      return null;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    throw InferenceException.invalid(path + "." + key + ": must be a boolean");
  }

  /** A non-empty string parameter, or null when absent. */
  static String string(Map<String, Object> params, String key, String path) {
    Object v = params.get(key);
    if (v == null) {
      return null;
    }
    if (v instanceof String s && !s.isEmpty()) {
      return s;
    }
    throw InferenceException.invalid(path + "." + key + ": must be a non-empty string");
  }

  /**
   * A non-negative integer parameter (a number or, as gRPC clients often send, a decimal string), or -1
   * when absent.
   */
  static long nonNegativeLong(Map<String, Object> params, String key, String path) {
    Object v = params.get(key);
    if (v == null) {
      return -1;
    }
    long n;
    if (v instanceof Long || v instanceof Integer) {
      n = ((Number) v).longValue();
    } else if (v instanceof BigInteger) {
      throw InferenceException.invalid(path + "." + key + ": " + v + " is too large");
    } else if (v instanceof String s) {
      try {
        n = Long.parseLong(s);
      } catch (NumberFormatException e) {
        throw InferenceException.invalid(path + "." + key + ": must be a non-negative integer, got '" + s + "'");
      }
    } else {
      throw InferenceException.invalid(path + "." + key + ": must be a non-negative integer");
    }
    if (n < 0) {
      throw InferenceException.invalid(path + "." + key + ": must be a non-negative integer, got " + n);
    }
    return n;
  }
}
