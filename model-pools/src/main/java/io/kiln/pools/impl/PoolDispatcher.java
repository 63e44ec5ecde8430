package io.kiln.pools.impl;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolStats;
import io.kiln.pools.RequestContext;
import io.kiln.pools.StreamTarget;
import io.kiln.pools.Tensor;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import io.kiln.pools.trace.Spans;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduling heart of a pool manager: a bounded request queue, a dynamic batcher and a dispatcher
 * onto a set of {@link WorkerChannel workers}, each executing one batch at a time.
 *
 * <p><b>Threading.</b> Single-threaded by design: every method except {@link #stats()} must be called on
 * one thread, the owner's (the pool manager actor's event-loop context). {@link Timers} tasks run there,
 * and worker completions and client cancellations are handed there by the injected {@code Executor}
 * (on Vert.x: {@code context::runOnContext}; in tests: {@code Runnable::run}), which must not reject
 * tasks. No method blocks. Futures are completed only once the dispatcher's state is consistent, so
 * their callbacks, the {@link WorkerFailureListener} included, may call back into the dispatcher.
 * {@link #stats()} may be called from any thread.
 *
 * <p><b>Batching.</b> While a worker is idle and requests are queued, the head's batch goes at once if
 * enough compatible rows are queued to fill it (or {@code maxBatchDelay} is zero, or the pool is
 * draining), otherwise when the head has waited {@code maxBatchDelay}. See {@link BatchFormer}. Idle
 * workers are taken LIFO: the most recently used one stays warm (caches, clocks, JIT) while surplus
 * workers stay fully idle, so {@code idleWorkers} is an honest scale-down signal; round-robin would keep
 * every worker lukewarm and hide the surplus. Requests re-queued after a worker failed go first, each
 * alone, so that a poison request fails by itself instead of spending its batch-mates' retries. With a
 * {@link #limitParallelism parallelism} set (the cores CPU workers share), a busy pool lets a partial batch
 * fill until a worker frees instead of starting another one beside it.
 *
 * <p><b>Parts.</b> This class admits requests, holds the queue and the workers, and drives the rest:
 * {@link BatchPlacement} sends each ready batch to an idle worker (or arms the batch timer), with
 * {@link BatchFormer} deciding when a batch goes and what it holds; {@link BatchRuns} hands batches to workers and
 * takes their answers (in flight, worker failures, the recent batch time and completion rate); {@link BatchHandOff}
 * builds what a worker is sent and sorts out a failed batch;
 * {@link Settlements} ends requests (answered, failed, refused, withdrawn) and defers their completions;
 * the runtime's {@link io.kiln.runtime.time.Deadlines} expire them, queued or executing, on one timer for all.
 *
 * <p><b>Errors</b> the returned futures fail with, all {@link InferenceException}s:
 * {@link CapacityExceededException} (queue full; {@code retryAfter} is the queue depth divided by the
 * recent completion rate, rounded up to whole seconds, between 1 and 30 s, 30 s when nothing completed
 * lately); UNAVAILABLE ("pool is draining", "pool is closed", or "worker X failed: cause" once re-queues
 * are spent or the queue has no room for a re-queue); DEADLINE_EXCEEDED, at the deadline, whether queued
 * or executing (an expired request is never dispatched); INVALID_INPUT (the inputs cannot be batched, or
 * the worker said so: never retried); INTERNAL (the model failed the batch and said so, e.g. a Python
 * predict that raised: never retried, the worker stays); UNAVAILABLE "request cancelled: reason" when the request's
 * token was cancelled (unqueued if not yet dispatched; counted as cancelled).
 *
 * <p><b>Priority.</b> Queued NORMAL requests go before queued LOW ones (a job's), but a LOW request that has waited
 * {@link RequestQueue#LOW_YIELD_NANOS} keeps its place in arrival order from then on, so batch work is slowed by
 * online traffic, never starved by it. See {@link RequestQueue}.
 */
public final class PoolDispatcher implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(PoolDispatcher.class);

  private final PoolConfig config;
  private final Spans spans;
  private final LongSupplier clock;
  private final Timers timers;
  private final Executor executor;
  private final Consumer<InferenceRequest> validator;
  private final PoolMetrics metrics;
  private final ModelAffinity affinity; // null in a pool of one model
  private final RepositoryControl control; // null in a pool of one model
  private final RequestQueue queue = new RequestQueue();
  private final BatchKeys keys;
  private final WorkerSet workers = new WorkerSet();
  private final Settlements settlements;
  /** The batches running on workers: in flight, their answers, worker failures. */
  private final BatchRuns runs;
  /** Which batch goes to which idle worker, and when. */
  private final BatchPlacement placement;
  /** Hands a withdrawal (a request's token cancelled, on any thread) to this dispatcher's thread. */
  private final Consumer<PendingRequest> withdrawn;
  private java.util.function.Predicate<Runnable> turnEnd; // null: dispatch as requests arrive
  private boolean turnEndArmed;
  private boolean running;
  private CompletableFuture<Void> drained;
  private boolean drainSignalled;
  private boolean closed;

  /**
   * A pool of one model that checks no request at submit, traces none and batches requests by rank alone.
   *
   * @param nanoClock monotonic time in nanoseconds, the clock of every deadline passed to {@link #submit}
   * @param executor hands worker completions and client cancellations to the owner's thread
   * @param tags identify this pool's meters: deployment, version and node (see {@link #meterTags})
   */
  public PoolDispatcher(PoolConfig config, LongSupplier nanoClock, Timers timers, Executor executor,
                        WorkerFailureListener listener, MeterRegistry registry, Iterable<Tag> tags) {
    this(config, nanoClock, timers, executor, listener, registry, tags, request -> { }, null, Spans.OFF, null);
  }

  /**
   * @param nanoClock monotonic time in nanoseconds, the clock of every deadline passed to {@link #submit}
   * @param executor hands worker completions and client cancellations to the owner's thread
   * @param tags identify this pool's meters: deployment, version and node (see {@link #meterTags})
   * @param validator checks each request that was not validated before (see
   *     {@link #submit(InferenceRequest, RequestContext, boolean, StreamTarget)}) on its own at submit, against the
   *     model's signature, and throws an {@link InferenceException} of kind INVALID_INPUT to refuse it, so that a
   *     bad request fails alone instead of failing the batch it would have joined at the worker; runs on
   *     the dispatcher's thread
   * @param repository the models of a multiplexed pool (a batch is one model, sent preferably to a worker that
   *     holds it, see {@link ModelAffinity}); null for a pool of one model
   * @param spans where the {@code kiln.pool.queue} spans of traced requests go ({@link Spans#OFF}: nowhere)
   * @param signature the model's (a pool of one model; a multiplexed pool reads its models' from the repository),
   *     or null: which inputs go to the model whole rather than stacked, so that requests batch only where those
   *     agree (see {@link BatchKey}); null knows scalars only, by their rank
   */
  public PoolDispatcher(PoolConfig config, LongSupplier nanoClock, Timers timers, Executor executor,
                        WorkerFailureListener listener, MeterRegistry registry, Iterable<Tag> tags,
                        Consumer<InferenceRequest> validator, io.kiln.pools.ModelRepository repository,
                        Spans spans, io.kiln.pools.ModelSignature signature) {
    this.keys = new BatchKeys(signature, repository);
    this.spans = Objects.requireNonNull(spans, "spans");
    this.affinity = repository == null ? null
        : new ModelAffinity(repository, MultiplexMeters.forPool(registry, Tags.of(tags)));
    this.validator = Objects.requireNonNull(validator, "validator");
    this.config = Objects.requireNonNull(config, "config");
    this.clock = Objects.requireNonNull(nanoClock, "nanoClock");
    this.timers = Objects.requireNonNull(timers, "timers");
    this.executor = Objects.requireNonNull(executor, "executor");
    this.withdrawn = p -> executor.execute(() -> withdraw(p));
    Objects.requireNonNull(listener, "listener");
    this.metrics = new PoolMetrics(Objects.requireNonNull(registry, "registry"), tags, config.maxQueued());
    this.settlements = new Settlements(queue, metrics, timers, nanoClock, this::run);
    this.control = affinity == null ? null
        : new RepositoryControl(affinity, workers, executor, settlements.queue(), this::run);
    this.runs = new BatchRuns(config, nanoClock, executor, listener, metrics, queue, workers, settlements, affinity,
        control, this::run);
    this.placement = new BatchPlacement(new BatchFormer(config.maxBatchSize(), config.maxBatchDelay().toNanos()),
        queue, workers, affinity, runs, settlements, new BatchTimer(timers, this::run));
    publish();
  }

  /** The tags a pool's meters carry. */
  public static Tags meterTags(String deployment, String version, String node) {
    return PoolMetrics.tags(deployment, version, node);
  }

  /** {@link #submit(InferenceRequest, long)} with the configured default timeout. */
  public CompletableFuture<List<Tensor>> submit(InferenceRequest request) {
    return submit(request, clock.getAsLong() + config.defaultTimeout().toNanos());
  }

  /**
   * {@link #submit(InferenceRequest, RequestContext, boolean, StreamTarget)} of an unvalidated request answered
   * once, with nothing but a deadline: no id, trace or token, NORMAL priority.
   *
   * @param deadlineNanos absolute time on the dispatcher's clock by which it must be answered
   */
  public CompletableFuture<List<Tensor>> submit(InferenceRequest request, long deadlineNanos) {
    return submit(request, RequestContext.of(null, deadlineNanos), false, null);
  }

  /**
   * Queues a request; the future completes with its outputs or fails as the class summary says. It may already be
   * complete on return (refused, invalid, or past its deadline). Completing the future from outside withdraws
   * nothing: cancelling the context's token does (a queued request is unqueued and never runs; a running one's
   * answer is dropped; either fails UNAVAILABLE and counts as cancelled).
   *
   * @param context its id (for log lines), deadline (absolute, on the dispatcher's clock), trace (carried to its
   *     worker; a traced request's time in the queue is a {@code kiln.pool.queue} span when spans are exported),
   *     priority and cancellation
   * @param validated whether it passed a {@link io.kiln.pools.RequestValidator} already (the validator is then
   *     skipped); whether it can be batched at all (batched inputs that agree on their first dimension, at least one
   *     row) is checked either way: that protects the workers
   * @param stream where a streaming model's chunks go, or null: a stream batches only with other streams, its
   *     worker sends the chunks there itself, and its future completes (with no outputs) once the stream is over;
   *     it is never re-queued after its worker failed (chunks may have gone out, and a second run would repeat
   *     them): it fails UNAVAILABLE
   */
  public CompletableFuture<List<Tensor>> submit(InferenceRequest request, RequestContext context, boolean validated,
                                                StreamTarget stream) {
    return submit(request, context, validated, stream, null, false);
  }

  /**
   * {@link #submit(InferenceRequest, RequestContext, boolean, StreamTarget)} of a sequence's request, which runs on
   * worker {@code pin} only (its state is there; see {@link #pinToWorkers}), batched only with that worker's requests
   * and with none when {@code alone}. A pinned request is never re-queued after its worker failed: it fails
   * UNAVAILABLE "worker X failed". One whose worker left the pool waits until its deadline.
   */
  public CompletableFuture<List<Tensor>> submit(InferenceRequest request, RequestContext context, boolean validated,
                                                StreamTarget stream, String pin, boolean alone) {
    Objects.requireNonNull(request, "request");
    long now = clock.getAsLong();
    if (closed || drained != null) {
      return settlements.refuse(Outcome.REJECTED, InferenceException.unavailable(closed ? "pool is closed" : "pool is draining"));
    }
    BatchKey key;
    try {
      key = keys.admit(request, stream != null);
      if (!validated) {
        validator.accept(request);
      }
    } catch (InferenceException e) {
      return settlements.refuse(Outcome.INVALID, e);
    }
    if (context.expired(now)) {
      return settlements.refuse(Outcome.EXPIRED, InferenceException.deadlineExceeded("deadline passed before the request was queued"));
    }
    if (queue.size() >= config.maxQueued()) {
      metrics.queueDepth(queue.size()); // the stats after a refusal show the full queue (else published at turn end)
      return settlements.refuse(Outcome.REJECTED, new CapacityExceededException(
          "pool queue is full (" + queue.size() + " requests waiting)", runs.retryAfter(queue.size(), now)));
    }
    if (context.cancellation().isCancelled()) {
      return settlements.refuse(Outcome.CANCELLED, InferenceException.unavailable("request cancelled: "
          + context.cancellation().reason()));
    }
    if (pin != null) {
      key = key.pinned(pin, alone);
    }
    PendingRequest p = new PendingRequest(request, key, context, now, stream);
    p.pin = pin;
    p.withdrawn = withdrawn;
    settlements.admitted(p, now);
    queue.add(p, now);
    p.admitted(spans); // last: a token cancelled from now on finds it admitted
    runAtTurnEnd();
    return p.future;
  }

  /**
   * Adds an idle worker, or replaces a failed one of the same id (after its restart). Ignored once closed.
   *
   * @throws IllegalStateException if a worker of that id is in the pool and has not failed
   */
  public void addWorker(WorkerChannel worker) {
    Objects.requireNonNull(worker.id(), "worker id");
    if (!closed) {
      workers.add(worker);
      if (affinity != null) {
        affinity.forget(worker.id());
      }
      run();
    }
  }

  /** Takes a worker out; a busy one finishes its batch first. Unknown ids are ignored. */
  public void removeWorker(String id) {
    workers.remove(id);
    if (affinity != null) {
      affinity.forget(id);
    }
    run();
  }

  /**
   * Caps at {@code batches} how many batches run at once while the next one would be partial (not full):
   * beyond it, queued requests wait for a worker to free up instead of going to an idle one, unless they fill a
   * batch (see {@link BatchFormer#holdsPartial}). For CPU workers that share fewer cores than there are workers
   * (the pool's node pinned to one core, say), a second partial batch would only time-slice the core with the
   * first and pay the model's per-call cost again; waiting, the rows share one call. It never leaves the pool
   * idle while requests wait, and a request holds at most about one batch's recent compute time (so a hung worker
   * does not stall the others). Unlimited by default (GPU workers, or as many cores as workers). Applies to pools
   * of one model (a multiplexed pool's batches follow its models).
   *
   * @throws IllegalArgumentException if {@code batches < 1}
   */
  public void limitParallelism(int batches) {
    if (batches < 1) {
      throw new IllegalArgumentException("parallelism must be at least 1, got " + batches);
    }
    placement.limitParallelism(batches);
    run();
  }

  /**
   * Makes this a sequence pool's dispatcher: every request is submitted pinned to a worker, and each idle worker takes
   * the oldest batch pinned to it. Call before the first submit.
   */
  public void pinToWorkers() {
    placement.pinToWorkers();
  }

  /** The ids of the workers in rotation (idle or busy, not failed). */
  public List<String> liveWorkerIds() {
    return workers.liveIds();
  }

  /** The channel of worker {@code id} in the pool, or null. */
  public WorkerChannel channel(String id) {
    WorkerSlot s = workers.byId(id);
    return s == null ? null : s.channel;
  }

  /** See {@link RepositoryControl#loadModel}. */
  public CompletionStage<Boolean> loadModel(String model) {
    return control == null ? notMultiplexed() : control.loadModel(model, closed);
  }

  /** See {@link RepositoryControl#unloadModel}. */
  public CompletionStage<Integer> unloadModel(String model) {
    return control == null ? notMultiplexed() : control.unloadModel(model);
  }

  /** See {@link RepositoryControl#modelStates}; empty for a pool of one model. */
  public java.util.Map<String, String> modelStates() {
    return control == null ? java.util.Map.of() : control.modelStates();
  }

  /** The models a multiplexed pool holds loaded now, in repository order; empty for a pool of one model. */
  public List<String> loadedModels() {
    return affinity == null ? List.of() : affinity.loadedModels();
  }

  private static <T> CompletionStage<T> notMultiplexed() {
    return CompletableFuture.failedFuture(InferenceException.invalid("the pool has no model repository"));
  }

  /** A snapshot of the pool; see {@link PoolStats}. Callable from any thread. */
  public PoolStats stats() {
    return metrics.snapshot();
  }

  /** The requests queued now ({@link PoolStats#queueDepth()} without the rest of a snapshot). Callable from any thread. */
  public int queueDepth() {
    return metrics.queueDepth();
  }

  /**
   * Stops accepting requests (new submits fail UNAVAILABLE "pool is draining"), dispatches what is queued
   * without waiting for fuller batches, and completes once nothing is queued or executing. Queued
   * requests with no worker left wait until one is added or their deadline passes. Idempotent.
   */
  public CompletionStage<Void> drain() {
    if (drained == null) {
      drained = new CompletableFuture<>();
      if (closed) {
        drained.completeExceptionally(InferenceException.unavailable("pool is closed"));
      }
      run();
    }
    return drained.minimalCompletionStage();
  }

  /**
   * Fails everything queued or executing with UNAVAILABLE "pool is closed" (late worker answers are
   * ignored), forgets the workers, cancels timers and removes this pool's meters. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    placement.stop();
    InferenceException ex = InferenceException.unavailable("pool is closed");
    for (PendingRequest p = queue.peek(); p != null; p = queue.peek()) {
      settlements.settle(p, Outcome.FAILED, null, ex);
    }
    for (WorkerSlot w : workers.clear()) {
      w.batch.forEach(p -> settlements.settle(p, Outcome.FAILED, null, ex));
    }
    runs.closed();
    settlements.close();
    if (drained != null && !drainSignalled) {
      drainSignalled = true;
      settlements.later(() -> drained.completeExceptionally(InferenceException.unavailable("pool closed before it drained")));
    }
    run();
    metrics.close();
    if (affinity != null) {
      affinity.close();
    }
  }

  /**
   * Makes a request wait for the end of its event loop's turn before it is dispatched, when {@code turnEnd} can
   * schedule that ({@code LoopTurns::atTurnEnd} on the dispatcher's context; it answers false when it cannot, and the
   * dispatcher then dispatches at once). The requests read in one turn then form one batch. Set before the first
   * request.
   */
  public void dispatchAtTurnEnd(java.util.function.Predicate<Runnable> turnEnd) {
    this.turnEnd = turnEnd;
  }

  private void runAtTurnEnd() {
    if (turnEnd == null || running) {
      run(); // a re-entrant call returns at once, and the loop it is in dispatches this request
    } else if (!turnEndArmed) {
      turnEndArmed = true;
      if (!turnEnd.test(this::turnEnded)) {
        turnEndArmed = false;
        run();
      }
    }
  }

  private void turnEnded() {
    turnEndArmed = false;
    run();
  }

  // Brings the dispatcher to rest. Re-entrant calls (from a completion's callback, or an inline worker
  // answer) return at once: the outermost loop picks up what they changed.
  private void run() {
    if (running) {
      return;
    }
    running = true;
    try {
      while (true) {
        dispatchReady();
        Runnable completion = settlements.poll();
        if (completion == null) {
          break;
        }
        try {
          completion.run();
        } catch (RuntimeException e) {
          LOG.error("pool completion callback failed", e);
        }
      }
    } finally {
      running = false;
    }
  }

  private void dispatchReady() {
    if (!closed) {
      placement.dispatchReady(clock.getAsLong(), drained != null);
      if (drained != null && !drainSignalled && queue.isEmpty() && workers.busyCount() == 0) {
        drainSignalled = true;
        settlements.later(() -> drained.complete(null));
      }
    }
    publish();
  }

  private void withdraw(PendingRequest p) {
    settlements.withdrawn(p);
    run();
  }

  private void publish() {
    metrics.queueDepth(queue.size());
    metrics.inFlight(runs.inFlightRequests(), workers.busyCount());
    metrics.workers(workers.idleCount(), workers.busyCount(), workers.totalCount());
  }
}
