package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.StreamTarget;
import io.kiln.pools.Tensor;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One accepted request on its way through the dispatcher. Owned by the dispatcher's thread, except
 * {@link #settled}, which the client's thread reads to tell whether a completion it sees was its own.
 */
final class PendingRequest extends io.kiln.runtime.time.Deadlines.Entry {

  enum State { QUEUED, IN_FLIGHT, DONE }

  final InferenceRequest request;
  final BatchKey key;
  final long rows;
  final long deadlineNanos;
  /** When it was first queued: the batch delay counts from here, so a re-queued request goes at once. */
  final long enqueuedNanos;
  final Answer future = new Answer();
  /** Told when the client completes {@link #future} itself (cancels it); runs on the client's thread. */
  java.util.function.Consumer<PendingRequest> withdrawn = p -> { };
  /** Where a streamed answer goes; null for a request answered once. */
  final StreamTarget stream;
  /** The id its log lines name (the client's, else its ticket); null when its submitter gave none. */
  String requestId;
  /** Its trace context, carried to its worker; null when it has none. */
  io.kiln.pools.trace.RequestTrace trace;
  /** Its {@code kiln.pool.queue} span while queued, when spans are exported and it is traced. */
  io.kiln.pools.trace.Spans.Span queueSpan;

  State state = State.QUEUED;
  /** When it was last queued, for the queue-time metric. */
  long queuedSinceNanos;
  /** Told when its deadline passes, while the dispatcher's deadlines watch it (until it settles). */
  java.util.function.Consumer<PendingRequest> onExpired;
  int requeues;
  /** Set before the dispatcher completes {@link #future}; a completion without it came from the client. */
  volatile boolean settled;

  // Links of the intrusive list in RequestQueue, so that cancel and expiry unlink in O(1).
  PendingRequest prev;
  PendingRequest next;
  boolean linked;

  @Override
  protected void expired() {
    onExpired.accept(this);
  }

  PendingRequest(InferenceRequest request, BatchKey key, long deadlineNanos, long nowNanos) {
    this(request, key, deadlineNanos, nowNanos, null);
  }

  PendingRequest(InferenceRequest request, BatchKey key, long deadlineNanos, long nowNanos, StreamTarget stream) {
    this.stream = stream;
    this.request = request;
    this.key = key;
    this.rows = BatchKey.rows(request);
    this.deadlineNanos = deadlineNanos;
    this.enqueuedNanos = nowNanos;
    this.queuedSinceNanos = nowNanos;
  }

  /**
   * Names it in log lines by {@code requestId} and carries {@code trace} (either may be null) to its worker; a traced,
   * sampled request's time in the queue opens a {@code kiln.pool.queue} span when {@code spans} exports.
   */
  void identify(String requestId, io.kiln.pools.trace.RequestTrace trace, io.kiln.pools.trace.Spans spans) {
    this.requestId = requestId;
    if (trace != null) {
      this.trace = trace;
      if (spans.enabled()) {
        io.kiln.pools.trace.TraceParent parent = io.kiln.pools.trace.TraceParent.parse(trace.traceparent());
        if (parent != null && parent.sampled()) {
          queueSpan = spans.start("kiln.pool.queue", parent, trace.tracestate(), false);
        }
      }
    }
  }

    /**
   * The future its submitter holds. Completing it from outside (cancel, complete, completeExceptionally) withdraws
   * the request: {@link #withdrawn} is told, so that the dispatcher unqueues it. Overriding the completions instead
   * of registering a callback on every future saves a completion node per request.
   */
  final class Answer extends CompletableFuture<List<Tensor>> {

    @Override
    public boolean complete(List<Tensor> value) {
      return byClient(super.complete(value));
    }

    @Override
    public boolean completeExceptionally(Throwable error) {
      return byClient(super.completeExceptionally(error));
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      return byClient(super.cancel(mayInterruptIfRunning));
    }

    private boolean byClient(boolean won) {
      if (won && !settled) {
        withdrawn.accept(PendingRequest.this);
      }
      return won;
    }
  }

  /** Whether it must not be dispatched any more: answered, cancelled by its client, or past its deadline. */
  boolean isDead(long nowNanos) {
    return state == State.DONE || future.isDone() || nowNanos - deadlineNanos >= 0;
  }
}
