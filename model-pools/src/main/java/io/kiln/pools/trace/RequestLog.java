package io.kiln.pools.trace;

import org.slf4j.MDC;

/**
 * The log context of a request: while a {@link Scope} is open, the thread's log lines carry the request id and trace
 * id (MDC keys {@value #REQUEST_ID}, {@value #TRACE_ID}), which the JSON log format writes as fields and the text
 * format appends. Open one only around lines about a request (errors, retries, worker failures, debug lines), after
 * checking the level, so that a request that logs nothing allocates nothing.
 */
public final class RequestLog {

  public static final String REQUEST_ID = "request_id";
  public static final String TRACE_ID = "trace_id";

  private static final Scope NONE = () -> { };

  private RequestLog() {
  }

  /** An open log context; closing it removes what it set. */
  public interface Scope extends AutoCloseable {
    @Override
    void close();
  }

  /** Sets the request's id and trace id (either may be null or empty: then it is left out). */
  public static Scope open(String requestId, String traceId) {
    boolean id = requestId != null && !requestId.isEmpty();
    boolean trace = traceId != null && !traceId.isEmpty();
    if (!id && !trace) {
      return NONE;
    }
    if (id) {
      MDC.put(REQUEST_ID, requestId);
    }
    if (trace) {
      MDC.put(TRACE_ID, traceId);
    }
    return () -> {
      if (id) {
        MDC.remove(REQUEST_ID);
      }
      if (trace) {
        MDC.remove(TRACE_ID);
      }
    };
  }

  /** {@link #open(String, String)} for a request's trace (null: nothing). */
  public static Scope open(RequestTrace trace) {
    return trace == null ? NONE : open(trace.requestId(), trace.traceId());
  }
}
