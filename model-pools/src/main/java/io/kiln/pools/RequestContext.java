package io.kiln.pools;

import io.kiln.pools.trace.RequestTrace;
import java.util.Objects;

/**
 * What one request carries from the edge (the gateway's exchange, a pipeline step, a job's batch) to the pool and
 * its worker besides its tensors: its id, its deadline, its trace context, its cancellation and its priority.
 * Created once where the request enters, never rebuilt on the way: the layers below read it rather than take each
 * piece as a parameter. Across the event bus it travels in its wire form, {@link PoolRequest} (time left, trace,
 * priority, and a ticket that a cancel names it by), and the pool manager makes the pool's own context of that.
 *
 * <ul>
 *   <li><b>Deadline:</b> an absolute time on this JVM's {@link System#nanoTime()} clock, the clock of every deadline
 *       in the runtime's {@link io.kiln.runtime.time.Deadlines}. It never crosses a process as a clock reading:
 *       on the event bus it travels as the time left ({@link #timeoutMs}), as {@link PoolRequest#timeoutMs} does.</li>
 *   <li><b>Trace:</b> the W3C trace context and the request id its log lines name, or null on the untraced path,
 *       which allocates nothing for it.</li>
 *   <li><b>Priority:</b> {@link Priority#LOW} for batch work (a job's {@code priority: low}), else NORMAL. A pool
 *       serves queued NORMAL requests before queued LOW ones, but a LOW one that has waited its share goes in its
 *       turn (see {@code RequestQueue.LOW_YIELD_NANOS}), so batch work never starves.</li>
 *   <li><b>Cancellation:</b> a {@link Cancellation} token, the one way to withdraw the request: cancelling it
 *       unqueues the request (it never runs) or drops a running one's result. {@link Cancellation#NONE} (the
 *       default) for a request nobody cancels, which costs nothing. Cancelling the future {@link PoolClient}
 *       returns withdraws nothing.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe apart from its token, which is thread-safe itself; {@code with...} return a copy
 * sharing the token.
 */
public final class RequestContext {

  /** How a request ranks against others for the same pool. */
  public enum Priority { NORMAL, LOW }

  private final String requestId;
  private final long deadlineNanos;
  private final RequestTrace trace;
  private final Priority priority;
  private final Cancellation cancellation;

  private RequestContext(String requestId, long deadlineNanos, RequestTrace trace, Priority priority,
                         Cancellation cancellation) {
    // A request without an id of its own is named by its trace's (the id the gateway gave it), else by none.
    this.requestId = requestId != null && !requestId.isEmpty() ? requestId : trace != null ? trace.requestId() : "";
    this.deadlineNanos = deadlineNanos;
    this.trace = trace;
    this.priority = Objects.requireNonNull(priority, "priority");
    this.cancellation = Objects.requireNonNull(cancellation, "cancellation");
  }

  /**
   * A NORMAL, untraced request.
   *
   * @param requestId the client's id, or "" (or null) when it has none: the pool names it by its ticket then
   * @param deadlineNanos when its caller stops waiting, on {@link System#nanoTime()}
   */
  public static RequestContext of(String requestId, long deadlineNanos) {
    return new RequestContext(requestId, deadlineNanos, null, Priority.NORMAL, Cancellation.NONE);
  }

  /** A NORMAL request carrying {@code trace} (null: untraced, as {@link #of(String, long)}). */
  public static RequestContext of(String requestId, long deadlineNanos, RequestTrace trace) {
    return new RequestContext(requestId, deadlineNanos, trace, Priority.NORMAL, Cancellation.NONE);
  }

  /**
   * A request with everything said at once (one object, no copies): what the gateway's edge and the pool manager
   * make.
   *
   * @param trace null: untraced
   * @param cancellation {@link Cancellation#NONE} when nobody will cancel it
   */
  public static RequestContext of(String requestId, long deadlineNanos, RequestTrace trace, Priority priority,
                                  Cancellation cancellation) {
    return new RequestContext(requestId, deadlineNanos, trace, priority, cancellation);
  }

  /** {@link #of} with a deadline {@code timeoutMillis} from now (at least 1 ms). */
  public static RequestContext within(String requestId, long timeoutMillis) {
    return of(requestId, System.nanoTime() + Math.max(1, timeoutMillis) * 1_000_000L);
  }

  /** This request carrying {@code trace} (null: none); its id becomes the trace's when this one has none. */
  public RequestContext withTrace(RequestTrace trace) {
    return new RequestContext(requestId, deadlineNanos, trace, priority, cancellation);
  }

  /** This request at {@code priority}. */
  public RequestContext withPriority(Priority priority) {
    return priority == this.priority ? this
        : new RequestContext(requestId, deadlineNanos, trace, priority, cancellation);
  }

  /** This request withdrawn by {@code cancellation} (its only token: a context holds one). */
  public RequestContext withCancellation(Cancellation cancellation) {
    return cancellation == this.cancellation ? this
        : new RequestContext(requestId, deadlineNanos, trace, priority, cancellation);
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

  /** Its cancellation token; {@link Cancellation#NONE} when nobody will cancel it. */
  public Cancellation cancellation() {
    return cancellation;
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
