package io.kiln.pools.trace;

/**
 * What a request carries for its logs and traces from the gateway to the pool (across the event bus when the pool
 * is remote, as part of {@link io.kiln.pools.PoolRequest}) and on to its worker: the request id its log lines name,
 * and the W3C trace context its spans continue. Only requests that have something to carry get one: a request
 * without a traceparent on a node that exports no spans carries null, and costs nothing.
 *
 * @param requestId the client's OIP {@code id}, or the id Kiln gave the request when it had none; never null
 * @param traceparent the W3C {@code traceparent} the next hop's spans take as parent (the gateway's span when it
 *     recorded one, else the client's header as it came), or null
 * @param tracestate the W3C {@code tracestate} as the client sent it (at most {@value TraceParent#MAX_LENGTH}
 *     characters), or null
 */
public record RequestTrace(String requestId, String traceparent, String tracestate) {

  public RequestTrace {
    requestId = requestId == null ? "" : requestId;
    if (tracestate != null && tracestate.length() > TraceParent.MAX_LENGTH) {
      tracestate = null; // the spec lets a receiver drop a tracestate it cannot keep
    }
  }

  /** The trace id, or null without a (valid) traceparent. */
  public String traceId() {
    TraceParent p = TraceParent.parse(traceparent);
    return p == null ? null : p.traceId();
  }
}
