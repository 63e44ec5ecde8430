package io.kiln.pools.testing;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.kiln.pools.impl.WorkerChannel;
import io.kiln.pools.trace.RequestTrace;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** A worker whose batches complete only when the test says; it records every batch it was sent. */
public final class TestWorker implements WorkerChannel {

  /**
   * One batch sent to the worker, its requests' traces as sent ({@link WorkerChannel#UNTRACED} when none is traced),
   * and the future the test completes.
   */
  public record Call(TestWorker worker, List<InferenceRequest> batch, List<RequestTrace> traces,
                     CompletableFuture<List<List<Tensor>>> future) {

    /** Completes with {@link #echo} of every request, in order. */
    public void succeed() {
      future.complete(batch.stream().map(TestWorker::echo).toList());
    }

    public void fail(Throwable cause) {
      future.completeExceptionally(cause);
    }

    public int rows() {
      return batch.stream().mapToInt(Requests::rowsOf).sum();
    }

    public List<String> ids() {
      return batch.stream().map(InferenceRequest::id).toList();
    }
  }

  private final String id;
  private final List<Call> calls = new ArrayList<>();

  public TestWorker(String id) {
    this.id = id;
  }

  /** What a healthy worker answers for a request: its inputs, renamed to "out-" + name. */
  public static List<Tensor> echo(InferenceRequest request) {
    return request.inputs().stream().map(t -> t.withName("out-" + t.name())).toList();
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public CompletionStage<List<List<Tensor>>> infer(List<InferenceRequest> batch, List<RequestTrace> traces) {
    Call call = new Call(this, List.copyOf(batch), traces, new CompletableFuture<>());
    calls.add(call);
    return call.future;
  }

  public List<Call> calls() {
    return calls;
  }

  public Call lastCall() {
    if (calls.isEmpty()) {
      throw new AssertionError("worker " + id + " got no batch");
    }
    return calls.get(calls.size() - 1);
  }

  /** The batch it is executing; fails if none. */
  public Call running() {
    Call last = lastCall();
    if (last.future.isDone()) {
      throw new AssertionError("worker " + id + " is not executing a batch");
    }
    return last;
  }

  public boolean isRunning() {
    return !calls.isEmpty() && !lastCall().future.isDone();
  }

  @Override
  public String toString() {
    return "TestWorker[" + id + "]";
  }
}
