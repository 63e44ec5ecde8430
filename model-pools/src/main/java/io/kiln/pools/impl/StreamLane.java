package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.StreamCall;
import io.kiln.pools.Tensor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One stream slot of a streaming worker, as the {@link PoolDispatcher} sees it: a worker of its own that runs one
 * stream at a time (see {@link ActorWorkerChannel#lanes}). Its stream completes when that stream is over; it fails
 * with the worker's failure when the step loop failed or the worker is gone.
 */
final class StreamLane implements WorkerChannel {

  private final ActorWorkerChannel worker;
  private final String id;
  private final StreamJoins joins;

  StreamLane(ActorWorkerChannel worker, int index, StreamJoins joins) {
    this.worker = worker;
    this.id = worker.id() + "#" + index;
    this.joins = joins;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch,
                                                  List<io.kiln.pools.trace.RequestTrace> traces) {
    return CompletableFuture.failedFuture(InferenceException.invalid("worker " + id + " only streams"));
  }

  @Override
  public CompletionStage<List<List<Tensor>>> stream(List<StreamCall> calls) {
    List<CompletableFuture<List<Tensor>>> done = new ArrayList<>(calls.size());
    for (StreamCall c : calls) {
      StreamJoins.Joined j = new StreamJoins.Joined(c, new CompletableFuture<>());
      done.add(j.done());
      if (joins.offer(j)) {
        worker.startLoop(joins);
      }
    }
    return CompletableFuture.allOf(done.toArray(CompletableFuture[]::new))
        .thenApply(v -> Collections.nCopies(calls.size(), List.<Tensor>of()));
  }
}
