package io.kiln.pools;

import io.kiln.pools.trace.RequestTrace;
import java.util.Objects;

/**
 * What one request carries from the edge (the gateway's exchange, a pipeline step, a job's batch) to the pool and
 * its worker besides its tensors: its id, its deadline, its trace context and its priority. Created once where the
 * request enters, never rebuilt on the way: the layers below read it rather than take each piece as a parameter.
 *
 * <ul>
 *   <li><b>Deadline:</b> an absolute time on this JVM's {@link System#nanoTime()} clock, the clock of every deadline
 *       in the runtime's {@link io.kiln.runtime.time.Deadlines}. It never crosses a process as a clock reading:
 *       on the event bus it travels as the time left ({@link #timeoutMs}), as {@link PoolRequest#timeoutMs} does.</li>
 *   <li><b>Trace:</b> the W3C trace context and the request id its log lines name, or null on the untraced path,
 *       which allocates nothing for it.</li>
 *   <li><b>Priority:</b> {@link Priority#LOW} for batch work (a job's {@code priority: low}), else NORMAL.</li>
 *   <li><b>Cancellation:</b> cancelling the future {@link PoolClient#infer(RequestContext, String, String, String,
 *       ValidatedRequest)} returns (or the {@link ResponseStream}) withdraws the request; no token is carried, so
 *       that the context stays immutable and costs one object per request.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe; {@code with...} return a copy.
 */
public final class RequestContext {

  /** How a request ranks against others for the same pool. */
  public enum Priority { NORMAL, LOW }

  private final String requestId;
  private final long deadlineNanos;
  private final RequestTrace trace;
  private final Priority priority;

  private RequestContext(String requestId, long deadlineNanos, RequestTrace trace, Priority priority) {
    // A request without an id of its own is named by its trace's (the id the gateway gave it), else by none.
    this.requestId = requestId != null && !requestId.isEmpty() ? requestId : trace != null ? trace.requestId() : "";
    this.deadlineNanos = deadlineNanos;
    this.trace = trace;
    this.priority = Objects.requireNonNull(priority, "priority");
  }

  /**
   * A NORMAL, untraced request.
   *
   * @param requestId the client's id, or "" (or null) when it has none: the pool names it by its ticket then
   * @param deadlineNanos when its caller stops waiting, on {@link System#nanoTime()}
   */
  public static RequestContext of(String requestId, long deadlineNanos) {
    return new RequestContext(requestId, deadlineNanos, null, Priority.NORMAL);
  }

  /** A NORMAL request carrying {@code trace} (null: untraced, as {@link #of(String, long)}). */
  public static RequestContext of(String requestId, long deadlineNanos, RequestTrace trace) {
    return new RequestContext(requestId, deadlineNanos, trace, Priority.NORMAL);
  }

  /** {@link #of} with a deadline {@code timeoutMillis} from now (at least 1 ms). */
  public static RequestContext within(String requestId, long timeoutMillis) {
    return of(requestId, System.nanoTime() + Math.max(1, timeoutMillis) * 1_000_000L);
  }

  /** This request carrying {@code trace} (null: none); its id becomes the trace's when this one has none. */
  public RequestContext withTrace(RequestTrace trace) {
    return new RequestContext(requestId, deadlineNanos, trace, priority);
  }

  /** This request at {@code priority}. */
  public RequestContext withPriority(Priority priority) {
    return priority == this.priority ? this : new RequestContext(requestId, deadlineNanos, trace, priority);
  }

  /** The id its log lines name; "" when it has none. */
  public String requestId() {
    return requestId;
  }

  /** When its caller stops waiting, on {@link System#nanoTime()}. */
  public long deadlineNanos() {
    return deadlineNanos;
  }

  /** Its trace context; null when untraced. */
  public RequestTrace trace() {
    return trace;
  }

  /** The trace id, or null when untraced or without a valid traceparent. */
  public String traceId() {
    return trace == null ? null : trace.traceId();
  }

  public Priority priority() {
    return priority;
  }

  /** The time left at {@code nowNanos}, in whole milliseconds (0 once it passed): its form on the wire. */
  public long timeoutMs(long nowNanos) {
    long left = deadlineNanos - nowNanos;
    return left <= 0 ? 0 : Math.max(1, left / 1_000_000);
  }

  /** Whether the deadline passed at {@code nowNanos}. */
  public boolean expired(long nowNanos) {
    return deadlineNanos - nowNanos <= 0;
  }

  @Override
  public String toString() {
    return "RequestContext[" + (requestId.isEmpty() ? "-" : requestId) + ", " + priority + "]";
  }
}
