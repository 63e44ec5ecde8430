package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelWorker;
import io.kiln.pools.StreamCall;
import java.time.Duration;
import io.kiln.pools.Tensor;
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

  private static final Duration STREAM_GRACE = Duration.ofSeconds(10);

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
  public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch) {
    DispatchTimes.Stamp stamp = times.dispatched(batch, clock.getAsLong());
    CompletableFuture<List<List<Tensor>>> call = handle.call(ModelWorker::infer, batch).toCompletableFuture();
    CompletableFuture<List<List<Tensor>>> out = call.whenComplete((r, e) -> stamp.done(clock.getAsLong()));
    last = out;
    return out;
  }

  /**
   * One actor call for the whole batch of streams, with a timeout of its longest deadline plus a grace: a
   * stream's calls outlast the handle's usual call timeout.
   */
  @Override
  public CompletionStage<List<List<Tensor>>> stream(List<StreamCall> calls) {
    List<InferenceRequest> requests = calls.stream().map(StreamCall::request).toList();
    DispatchTimes.Stamp stamp = times.dispatched(requests, clock.getAsLong());
    long longest = calls.stream().mapToLong(StreamCall::timeoutMs).max().orElse(0);
    streaming = true;
    CompletableFuture<List<List<Tensor>>> call = handle.withTimeout(Duration.ofMillis(longest).plus(STREAM_GRACE))
        .call(ModelWorker::stream, calls).toCompletableFuture();
    CompletableFuture<List<List<Tensor>>> out = call.whenComplete((r, e) -> {
      streaming = false;
      stamp.done(clock.getAsLong());
    });
    last = out;
    return out;
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
