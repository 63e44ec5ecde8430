package io.kiln.gateway.impl;

import io.kiln.pools.trace.RequestLog;
import io.kiln.pools.trace.RequestTrace;
import io.kiln.pools.trace.Spans;
import io.kiln.pools.trace.TraceParent;

/**
 * One request's trace at the gateway: the {@code kiln.gateway.request} span when the node exports spans and the
 * request's parent (if any) is sampled, and the traceparent it carries to its pool and answers with. A request with
 * no traceparent on a node that exports no spans has none ({@link #start} returns null, having done nothing); a
 * malformed traceparent is ignored (a new trace when spans are exported, nothing otherwise). Used on the request's
 * event loop only.
 */
final class GatewayTrace {

  static final String TRACEPARENT = "traceparent";
  static final String TRACESTATE = "tracestate";

  private final Spans.Span span; // null when not recorded here
  private final String traceparent;
  private final String tracestate;

  private GatewayTrace(Spans.Span span, String traceparent, String tracestate) {
    this.span = span;
    this.traceparent = traceparent;
    this.tracestate = tracestate;
  }

  /** The trace of a request that arrived with these headers (null or absent: none), or null when it has none. */
  static GatewayTrace start(Spans spans, String traceparent, String tracestate, String protocol) {
    if (!spans.enabled()) {
      if (traceparent == null) {
        return null; // the common case: no work at all
      }
      TraceParent p = TraceParent.parse(traceparent);
      return p == null ? null : new GatewayTrace(null, p.value(), state(tracestate));
    }
    TraceParent p = TraceParent.parse(traceparent);
    if (p != null && !p.sampled()) {
      return new GatewayTrace(null, p.value(), state(tracestate));
    }
    String state = p == null ? null : state(tracestate); // a new trace does not inherit a stranger's state
    Spans.Span span = spans.start("kiln.gateway.request", p, state, true).attribute("kiln.protocol", protocol);
    return new GatewayTrace(span, span.context().value(), state);
  }

  private static String state(String tracestate) {
    return tracestate == null || tracestate.length() > TraceParent.MAX_LENGTH ? null : tracestate;
  }

  /** The traceparent the pool's spans continue and the answer carries. */
  String traceparent() {
    return traceparent;
  }

  String traceId() {
    return traceparent.substring(3, 35);
  }

  /** What the request carries to its pool. */
  RequestTrace forPool(String requestId) {
    return new RequestTrace(requestId, traceparent, tracestate);
  }

  void model(String model) {
    if (span != null) {
      span.attribute("kiln.model", model);
    }
  }

  /** Ends the span (if recorded) with the request's outcome; {@code ok} false marks it failed. */
  void end(String outcome, String code, boolean ok) {
    if (span != null) {
      span.attribute("kiln.outcome", outcome).attribute("kiln.status", code);
      if (!ok) {
        span.error(outcome);
      }
      span.end();
    }
  }

  /** The log context of a request that may have a trace (either argument may be null). */
  static RequestLog.Scope log(String requestId, GatewayTrace trace) {
    return RequestLog.open(requestId, trace == null ? null : trace.traceId());
  }
}
