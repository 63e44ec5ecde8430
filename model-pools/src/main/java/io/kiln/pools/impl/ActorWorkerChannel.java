package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelWorker;
import java.time.Duration;
import io.kiln.pools.Tensor;
import io.kiln.pools.trace.RequestTrace;
import io.kiln.runtime.ActorHandle;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * A {@link WorkerChannel} over a {@link ModelWorker} actor: each batch is one actor call, which fails with
 * the worker's own exception (INVALID_INPUT for bad inputs, {@code ModelExecutionException} when the
 * model failed), {@code ActorDiedException} when the actor died under it, or {@code CallTimeoutException}
 * when it did not answer within the handle's timeout; the runtime guarantees it completes. {@link #infer}
 * is called on the manager's thread; the rest may be read from any.
 */
public final class ActorWorkerChannel implements WorkerChannel {

  private static final Duration LOOP_TIMEOUT = io.kiln.pools.SpecRules.MAX_DURATION;

  private final String id;
  private final ActorHandle<ModelWorker> handle;
  private final DispatchTimes times;
  private final LongSupplier clock;
  private volatile CompletableFuture<?> last = CompletableFuture.completedFuture(null);
  private volatile boolean streaming;

  public ActorWorkerChannel(String id, ActorHandle<ModelWorker> handle, DispatchTimes times, LongSupplier clock) {
    this.id = id;
    this.handle = handle;
    this.times = times;
    this.clock = clock;
  }

  @Override
  public String id() {
    return id;
  }

  public ActorHandle<ModelWorker> handle() {
    return handle;
  }

  @Override
  public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch, List<RequestTrace> traces) {
    DispatchTimes.Stamp stamp = times.dispatched(batch, clock.getAsLong());
    CompletableFuture<List<List<Tensor>>> call = handle.call(ModelWorker::infer, batch, traces).toCompletableFuture();
    CompletableFuture<List<List<Tensor>>> out = call.whenComplete((r, e) -> stamp.done(clock.getAsLong()));
    last = out;
    return out;
  }

  @Override
  public CompletionStage<Boolean> load(String model) {
    // A load may take as long as a worker's first load; the batches behind it wait in the worker's mailbox.
    CompletableFuture<Boolean> call = handle.withTimeout(LOOP_TIMEOUT).call(ModelWorker::loadModel, model)
        .toCompletableFuture();
    last = call;
    return call;
  }

  @Override
  public CompletionStage<Integer> endSequences(List<String> ids) {
    return handle.call(ModelWorker::endSequences, ids);
  }

  @Override
  public CompletionStage<Boolean> unload(String model) {
    return handle.call(ModelWorker::unloadModel, model);
  }

  /**
   * The stream lanes of a streaming worker: {@code n} channels (ids {@code <id>#<j>}) that the dispatcher treats as
   * workers of one stream each; they offer their streams to the worker's intake ({@code joins}), starting its step
   * loop when none runs, so up to {@code n} streams share the worker's steps and a new one joins at the next step.
   */
  public List<WorkerChannel> lanes(int n, StreamHub hub) {
    StreamJoins joins = hub.joins(id);
    List<WorkerChannel> out = new java.util.ArrayList<>(n);
    for (int j = 0; j < n; j++) {
      out.add(new StreamLane(this, j, joins));
    }
    return out;
  }

  /** Starts the worker's step loop: one actor call, as long as streams keep coming (each keeps its own deadline). */
  void startLoop(StreamJoins joins) {
    streaming = true;
    CompletableFuture<Integer> call = handle.withTimeout(LOOP_TIMEOUT).call(ModelWorker::streamLoop).toCompletableFuture();
    last = call;
    call.whenComplete((n, e) -> {
      streaming = joins.looping();
      if (e != null) {
        joins.abort(e);
      }
    });
  }

  /** Whether it runs streams now: health probes wait behind them, so the prober leaves it alone. */
  public boolean streaming() {
    return streaming;
  }

  /** Whether a batch is executing. */
  public boolean busy() {
    return !last.isDone();
  }

  /** Completes (never exceptionally) once the batch executing now, if any, has been answered. */
  public CompletionStage<Void> idle() {
    return last.handle((r, e) -> null);
  }
}
