package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.kiln.pools.trace.RequestLog;
import io.kiln.runtime.time.Deadlines;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How requests leave a {@link PoolDispatcher}: answered, failed, refused, past their deadline (the runtime's
 * {@link Deadlines}, confined to the dispatcher's thread: one list and one timer for all), or withdrawn
 * (their token cancelled). Each way unlinks the request from the queue, closes its queue span, stops watching its
 * deadline and counts its outcome exactly once.
 *
 * <p>Completing a future is deferred: {@link #settle} records the outcome and queues the completion, which the
 * dispatcher's loop runs ({@link #poll}) once its own state is consistent, so that the callbacks may call back into
 * the dispatcher. Other deferred work (drain signals, failure reports, model loads' answers) queues here too
 * ({@link #later}), to run in the same order. Not thread-safe: the dispatcher's thread only.
 */
final class Settlements {

  private static final Logger LOG = LoggerFactory.getLogger(PoolDispatcher.class);

  private final RequestQueue queue;
  private final PoolMetrics metrics;
  private final Deadlines deadlines;
  private final Consumer<PendingRequest> expire = this::expire; // one for all requests: no allocation per request
  private final ArrayDeque<Runnable> completions = new ArrayDeque<>();

  /** @param afterSweep run after each deadline sweep that expired requests (the dispatcher brings itself to rest) */
  Settlements(RequestQueue queue, PoolMetrics metrics, Timers timers, LongSupplier clock, Runnable afterSweep) {
    this.queue = queue;
    this.metrics = metrics;
    this.deadlines = Deadlines.confined(timers, clock, afterSweep);
  }

  /** Watches an admitted request's deadline (after {@code nowNanos}) until it settles. */
  void admitted(PendingRequest p, long nowNanos) {
    p.onExpired = expire;
    deadlines.add(p, p.deadlineNanos());
  }

  /** A request refused at submit: counted, never queued. */
  CompletableFuture<List<Tensor>> refuse(Outcome outcome, InferenceException error) {
    metrics.outcome(outcome);
    return CompletableFuture.failedFuture(error);
  }

  /**
   * Ends {@code p} with {@code value} (outcome OK) or {@code error}; its future completes on the next {@link #poll}
   * (counted CANCELLED if its holder completed it first). A no-op for a request already settled.
   */
  void settle(PendingRequest p, Outcome outcome, List<Tensor> value, Throwable error) {
    if (p.state == PendingRequest.State.DONE) {
      return;
    }
    if (outcome != Outcome.CANCELLED && p.cancelled()) {
      // Cancelled before its withdrawal reached this thread: it ends cancelled whatever came first, its answer dropped.
      complete(p, Outcome.CANCELLED, null, cancelled(p));
    } else {
      complete(p, outcome, value, error);
    }
  }

  private void complete(PendingRequest p, Outcome outcome, List<Tensor> value, Throwable error) {
    finish(p);
    if (error != null && outcome != Outcome.OK && LOG.isDebugEnabled()) {
      try (RequestLog.Scope log = RequestLog.open(p.requestId(), traceId(p))) {
        LOG.debug("request {} {}: {}", p.requestId(), outcome.name().toLowerCase(Locale.ROOT), error.getMessage());
      }
    }
    completions.add(() -> {
      boolean won = error == null ? p.future.complete(value) : p.future.completeExceptionally(error);
      metrics.outcome(won ? outcome : Outcome.CANCELLED);
    });
  }

  /**
   * Its token was cancelled: unqueued, it fails UNAVAILABLE "request cancelled: reason" and counts as CANCELLED (never
   * as an error of the model); an executing batch just goes on, and its answer for this request is dropped.
   */
  void withdrawn(PendingRequest p) {
    if (p.state == PendingRequest.State.DONE) {
      return;
    }
    settle(p, Outcome.CANCELLED, null, cancelled(p));
  }

  private static InferenceException cancelled(PendingRequest p) {
    return InferenceException.unavailable("request cancelled: " + p.context.cancellation().reason());
  }

  /** Queues {@code r} to run, in order with the futures' completions, on the next {@link #poll}s. */
  void later(Runnable r) {
    completions.add(r);
  }

  /** The next deferred completion, or null. */
  Runnable poll() {
    return completions.poll();
  }

  /** The completions queue, for the deferred work of {@link RepositoryControl}. */
  ArrayDeque<Runnable> queue() {
    return completions;
  }

  /** Stops the deadline timer (the dispatcher closed, after settling everything). */
  void close() {
    deadlines.clear();
  }

  private void expire(PendingRequest p) {
    if (p.state == PendingRequest.State.DONE) {
      return;
    }
    if (p.cancelled()) {
      withdrawn(p);
    } else {
      settle(p, Outcome.EXPIRED, null, InferenceException.deadlineExceeded(
          p.state == PendingRequest.State.QUEUED ? "deadline passed while queued" : "deadline passed while executing"));
    }
  }

  private void finish(PendingRequest p) {
    if (p.queueSpan != null) { // it never left the queue: expired, cancelled, or the pool closed
      p.queueSpan.error(p.cancelled() ? "cancelled" : "not dispatched").end();
      p.queueSpan = null;
    }
    queue.remove(p);
    p.state = PendingRequest.State.DONE;
    p.settled = true;
    p.remove();
  }

  static String traceId(PendingRequest p) {
    return p.context.traceId();
  }
}
