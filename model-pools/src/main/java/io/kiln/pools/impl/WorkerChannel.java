package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.kiln.pools.trace.RequestTrace;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * How the {@link PoolDispatcher} talks to one model worker; the pool manager adapts an actor handle to it.
 * The dispatcher sends a worker at most one batch at a time.
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>{@link #infer} must not block: it sends the batch and returns a stage that completes later, on
 *       any thread (the dispatcher marshals the completion back onto its own thread).</li>
 *   <li>The stage completes with exactly one result list per request, in the order of {@code batch}.</li>
 *   <li>It fails with an {@link io.kiln.pools.InferenceException} of kind {@code INVALID_INPUT} when the
 *       inputs were wrong (the worker is healthy; the requests are not retried). Any other failure means
 *       the worker itself failed (died, timed out, out of memory); its requests may be re-queued.</li>
 *   <li>It always completes: a worker that dies must fail the stage, never leave it pending.</li>
 * </ol>
 */
public interface WorkerChannel {

  /** Unique within one dispatcher; names the worker in logs, metrics and failure messages. */
  String id();

  /**
   * Executes one batch; see the interface contract. {@code traces} carries its requests' trace contexts to the
   * worker, so that the worker's spans and log lines continue theirs: one per request, in batch order (null for one
   * without), or {@link #UNTRACED} when none is (the dispatcher's untraced path allocates nothing for it). A channel
   * that cannot carry them runs the batch all the same.
   */
  CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch, List<RequestTrace> traces);

  /** The {@code traces} of a batch none of whose requests is traced: shared, empty. */
  List<RequestTrace> UNTRACED = List.of();

  /**
   * Runs a batch of streams (a streaming model's requests); completes, as {@link #infer} does, with one (empty)
   * list per call once every stream is over. Channels of workers that cannot stream refuse.
   */
  default CompletionStage<List<List<Tensor>>> stream(List<io.kiln.pools.StreamCall> calls) {
    return java.util.concurrent.CompletableFuture.failedFuture(
        io.kiln.pools.InferenceException.invalid("worker " + id() + " does not stream"));
  }

  /**
   * Frees the state of sequences {@code ids} on a sequence model's worker (see {@code ModelWorker#endSequences}),
   * after the batch it runs; completes with how many it held. Others hold none.
   */
  default CompletionStage<Integer> endSequences(List<String> ids) {
    return java.util.concurrent.CompletableFuture.completedFuture(0);
  }

  /** A multiplexed worker loads {@code model} (see {@code ModelWorker#loadModel}); others refuse. */
  default CompletionStage<Boolean> load(String model) {
    return java.util.concurrent.CompletableFuture.failedFuture(
        io.kiln.pools.InferenceException.invalid("worker " + id() + " has no model repository"));
  }

  /** A multiplexed worker closes {@code model} if it holds it; others refuse. */
  default CompletionStage<Boolean> unload(String model) {
    return java.util.concurrent.CompletableFuture.failedFuture(
        io.kiln.pools.InferenceException.invalid("worker " + id() + " has no model repository"));
  }
}
