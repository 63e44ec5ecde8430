package io.kiln.pools.impl;

import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;

/**
 * The batches a {@link PoolDispatcher}'s workers are running: hands each batch to its worker, and when the
 * worker answers settles the batch's requests, or re-queues them and marks the worker failed. Owns what the
 * dispatcher learns from running batches: the requests in flight, the recent compute time of a batch and
 * the recent completion rate (which sizes a refused request's {@code retryAfter}).
 *
 * <p>Threading: the dispatcher's, single-threaded; a worker's answer is handed to that thread by the
 * dispatcher's {@code Executor} before anything here runs. Every method ends by leaving the dispatcher to
 * bring itself to rest ({@code rerun}); the dispatcher's loop makes re-entrant calls return at once.
 */
final class BatchRuns {

  private static final long THROUGHPUT_TAU_NANOS = Duration.ofSeconds(5).toNanos();

  private final PoolConfig config;
  private final LongSupplier clock;
  private final Executor executor;
  private final WorkerFailureListener listener;
  private final PoolMetrics metrics;
  private final RequestQueue queue;
  private final WorkerSet workers;
  private final Settlements settlements;
  private final ModelAffinity affinity; // null in a pool of one model
  private final RepositoryControl control; // null in a pool of one model
  private final Runnable rerun;
  private final Throughput throughput;
  private int inFlightRequests;
  /** Recent compute time of a batch (a moving average; 0 until one finished): how long a partial batch may hold. */
  private long batchNanos;

  BatchRuns(PoolConfig config, LongSupplier clock, Executor executor, WorkerFailureListener listener,
            PoolMetrics metrics, RequestQueue queue, WorkerSet workers, Settlements settlements,
            ModelAffinity affinity, RepositoryControl control, Runnable rerun) {
    this.config = config;
    this.clock = clock;
    this.executor = executor;
    this.listener = listener;
    this.metrics = metrics;
    this.queue = queue;
    this.workers = workers;
    this.settlements = settlements;
    this.affinity = affinity;
    this.control = control;
    this.rerun = rerun;
    this.throughput = new Throughput(THROUGHPUT_TAU_NANOS, clock.getAsLong());
  }

  int inFlightRequests() {
    return inFlightRequests;
  }

  /** Recent compute time of a batch, 0 until one finished. */
  long batchNanos() {
    return batchNanos;
  }

  /** How long a refused request should wait, from the queue depth and the recent completion rate. */
  Duration retryAfter(int queued, long now) {
    return throughput.retryAfter(queued, now);
  }

  /** The pool closed: what was in flight was failed, late answers are ignored. */
  void closed() {
    inFlightRequests = 0;
  }

  // All bookkeeping happens before the hand-off: a worker may answer inline, re-entering done.
  void dispatch(WorkerSlot worker, List<PendingRequest> batch, long now) {
    inFlightRequests += batch.size();
    long rows = 0;
    for (PendingRequest p : batch) {
      p.state = PendingRequest.State.IN_FLIGHT;
      metrics.dispatched(now - p.queuedSinceNanos);
      rows += p.rows;
      if (p.queueSpan != null) {
        p.queueSpan.attribute("kiln.worker", worker.channel.id()).attribute("kiln.requeues", p.requeues).end();
        p.queueSpan = null;
      }
    }
    metrics.batchStarted(rows);
    BatchHandOff.send(worker.channel, batch, now)
        .whenComplete((results, error) -> executor.execute(() -> done(worker, batch, results, error)));
  }

  private void done(WorkerSlot worker, List<PendingRequest> batch, List<List<Tensor>> results, Throwable error) {
    if (!workers.finishBatch(worker, batch)) {
      return; // closed meanwhile
    }
    long now = clock.getAsLong();
    inFlightRequests -= batch.size();
    long computed = now - worker.dispatchedNanos;
    metrics.batchDone(computed);
    Throwable failure = BatchResults.failureOf(results, error, batch.size());
    if (affinity != null) {
      String model = batch.get(0).key.model();
      boolean loaded = failure == null || BatchResults.isInvalidInput(failure);
      if (affinity.isLoadingOn(worker.id(), model)) {
        affinity.done(worker.id(), model, loaded);
        control.loadEnded(model, loaded ? null : failure);
      }
    }
    if (failure == null || BatchResults.isInvalidInput(failure) || BatchResults.isModelError(failure)) {
      workers.makeIdle(worker);
      throughput.record(batch.size(), now);
      batchNanos = batchNanos == 0 ? Math.max(1, computed) : batchNanos + (computed - batchNanos) / 8;
      for (int i = 0; i < batch.size(); i++) {
        if (failure == null) {
          settlements.settle(batch.get(i), Outcome.OK, results.get(i), null);
        } else {
          settlements.settle(batch.get(i), BatchResults.isInvalidInput(failure) ? Outcome.INVALID : Outcome.FAILED, null, failure);
        }
      }
    } else {
      workerFailed(worker, batch, failure, now);
    }
    rerun.run();
  }

  private void workerFailed(WorkerSlot worker, List<PendingRequest> batch, Throwable cause, long now) {
    String id = worker.channel.id();
    List<PendingRequest> again = BatchHandOff.failed(id, batch, cause, config, queue.size(), now, settlements);
    queue.addFirst(again);
    metrics.requeued(again.size());
    if (affinity != null) {
      affinity.forget(id); // it restarts empty
    }
    if (workers.makeFailed(worker)) {
      settlements.later(() -> listener.workerFailed(id, cause));
    }
  }
}
