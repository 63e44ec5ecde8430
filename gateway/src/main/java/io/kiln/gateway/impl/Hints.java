package io.kiln.gateway.impl;

import io.kiln.gateway.spi.DataLocator;
import io.kiln.pools.InferenceException;
import java.util.Map;

/**
 * What a request says about where and how long it may run, from protocol headers (HTTP headers, gRPC
 * metadata) and request parameters.
 *
 * @param pinnedNode the node a locality hint names, or null: header {@code kiln-node}, else parameter
 *     {@code node_id}, else parameter {@code data_key} resolved by the {@link DataLocator}
 * @param timeoutMillis the timeout the request asks for, or -1: the smallest of header {@code kiln-timeout-ms},
 *     parameter {@code timeout_ms} and the gRPC deadline
 */
record Hints(String pinnedNode, long timeoutMillis) {

  static final String NODE_HEADER = "kiln-node";
  static final String TIMEOUT_HEADER = "kiln-timeout-ms";

  /**
   * @param nodeHeader the {@code kiln-node} header or null
   * @param timeoutHeader the {@code kiln-timeout-ms} header or null
   * @param protocolTimeoutMillis a deadline the transport carries (gRPC), or -1
   * @throws InferenceException kind INVALID_INPUT naming the header or parameter when one is malformed
   */
  static Hints from(String nodeHeader, String timeoutHeader, long protocolTimeoutMillis, Map<String, Object> params,
                    DataLocator locator) {
    String node = nodeHeader != null && !nodeHeader.isBlank() ? nodeHeader.trim() : null;
    String nodeParam = Fields.string(params, Fields.NODE_ID, "parameters");
    String dataKey = Fields.string(params, Fields.DATA_KEY, "parameters");
    if (node == null) {
      node = nodeParam;
    }
    if (node == null && dataKey != null) {
      node = locator.nodeFor(dataKey).orElse(null);
    }
    long timeout = protocolTimeoutMillis > 0 ? protocolTimeoutMillis : -1;
    if (timeoutHeader != null) {
      timeout = min(timeout, positive(timeoutHeader.trim(), TIMEOUT_HEADER));
    }
    Object param = params.get(Fields.TIMEOUT_MS);
    if (param != null) {
      long t = param instanceof Long l ? l : param instanceof String s ? positive(s, "parameters.timeout_ms") : -1;
      if (t <= 0) {
        throw InferenceException.invalid("parameters.timeout_ms: must be a positive integer (milliseconds)");
      }
      timeout = min(timeout, t);
    }
    return new Hints(node, timeout);
  }

  private static long min(long current, long candidate) {
    return current < 0 ? candidate : Math.min(current, candidate);
  }

  private static long positive(String value, String what) {
    try {
      long v = Long.parseLong(value);
      if (v > 0) {
        return v;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw InferenceException.invalid(what + ": must be a positive integer (milliseconds), got '" + value + "'");
  }
}
