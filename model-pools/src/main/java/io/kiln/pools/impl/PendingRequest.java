package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.RequestContext;
import io.kiln.pools.StreamTarget;
import io.kiln.pools.Tensor;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One accepted request on its way through the dispatcher, holding the pool's {@link RequestContext} of it (its id,
 * deadline, trace, priority and cancellation: read from there, never copied into fields of its own). Owned by the
 * dispatcher's thread, except {@link #settled}, which other threads may read, and {@link #run}, which its token
 * calls from the cancelling thread.
 */
final class PendingRequest extends io.kiln.runtime.time.Deadlines.Entry implements Runnable {

  enum State { QUEUED, IN_FLIGHT, DONE }

  final InferenceRequest request;
  final RequestContext context;
  final BatchKey key;
  final long rows;
  /** Whether it yields to NORMAL requests in the queue (see {@link RequestQueue#LOW_YIELD_NANOS}). */
  final boolean low;
  /** When it was first queued: the batch delay counts from here, so a re-queued request goes at once. */
  final long enqueuedNanos;
  /** Its answer. Completed by the dispatcher only: a holder withdraws the request through its token. */
  final CompletableFuture<List<Tensor>> future = new CompletableFuture<>();
  /** Told, on the cancelling thread, when its token is cancelled: hands the withdrawal to the dispatcher. */
  java.util.function.Consumer<PendingRequest> withdrawn = p -> { };
  /** The worker a sequence request must run on (its state is there); null for any worker. */
  String pin;
  /** Where a streamed answer goes; null for a request answered once. */
  final StreamTarget stream;
  /** Its {@code kiln.pool.queue} span while queued, when spans are exported and it is traced. */
  io.kiln.pools.trace.Spans.Span queueSpan;

  State state = State.QUEUED;
  /** When it was last queued, for the queue-time metric. */
  long queuedSinceNanos;
  /** Told when its deadline passes, while the dispatcher's deadlines watch it (until it settles). */
  java.util.function.Consumer<PendingRequest> onExpired;
  int requeues;
  /** Set before the dispatcher completes {@link #future}. */
  volatile boolean settled;

  // Links of the intrusive list in RequestQueue, so that cancel and expiry unlink in O(1).
  PendingRequest prev;
  PendingRequest next;
  boolean linked;

  @Override
  protected void expired() {
    onExpired.accept(this);
  }

  /** Its token was cancelled (on any thread): the dispatcher withdraws it on its own. */
  @Override
  public void run() {
    if (!settled) {
      withdrawn.accept(this);
    }
  }

  PendingRequest(InferenceRequest request, BatchKey key, RequestContext context, long nowNanos) {
    this(request, key, context, nowNanos, null);
  }

  PendingRequest(InferenceRequest request, BatchKey key, RequestContext context, long nowNanos, StreamTarget stream) {
    this.stream = stream;
    this.request = request;
    this.context = context;
    this.key = key;
    this.rows = key.rows();
    this.low = context.priority() == RequestContext.Priority.LOW;
    this.enqueuedNanos = nowNanos;
    this.queuedSinceNanos = nowNanos;
  }

  /** The id its log lines name (the client's, else its trace's, else its ticket); "" when it has none. */
  String requestId() {
    return context.requestId();
  }

  /** When its caller stops waiting, on the dispatcher's clock. */
  long deadlineNanos() {
    return context.deadlineNanos();
  }

  /** Its trace context, carried to its worker; null when it has none. */
  io.kiln.pools.trace.RequestTrace trace() {
    return context.trace();
  }

  /**
   * A traced, sampled request's time in the queue opens a {@code kiln.pool.queue} span when {@code spans} exports;
   * its token's cancellation is heard from now on.
   */
  void admitted(io.kiln.pools.trace.Spans spans) {
    io.kiln.pools.trace.RequestTrace trace = context.trace();
    if (trace != null && spans.enabled()) {
      io.kiln.pools.trace.TraceParent parent = io.kiln.pools.trace.TraceParent.parse(trace.traceparent());
      if (parent != null && parent.sampled()) {
        queueSpan = spans.start("kiln.pool.queue", parent, trace.tracestate(), false);
      }
    }
    context.cancellation().onCancel(this); // NONE: nothing; else this is the listener, nothing allocated
  }

  /** Whether it must not be dispatched any more: answered, cancelled, or past its deadline. */
  boolean isDead(long nowNanos) {
    return state == State.DONE || context.cancellation().isCancelled() || nowNanos - context.deadlineNanos() >= 0;
  }

  /** Whether its token was cancelled. */
  boolean cancelled() {
    return context.cancellation().isCancelled();
  }
}
