package io.kiln.pools.testing;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolStats;
import io.kiln.pools.Tensor;
import io.kiln.pools.impl.PoolDispatcher;
import io.kiln.pools.impl.WorkerFailureListener;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * A {@link PoolDispatcher} on a {@link ManualClock}, a direct executor (or any given one) and a
 * {@link SimpleMeterRegistry}, recording what its failure listener is told.
 */
public final class DispatcherHarness implements AutoCloseable {

  public final ManualClock clock;
  public final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  /** (workerId, cause) pairs the failure listener was told, in order. */
  public final List<Map.Entry<String, Throwable>> failures = new ArrayList<>();
  public final PoolDispatcher dispatcher;
  /** Called after recording a failure, e.g. to restart the worker; does nothing by default. */
  public WorkerFailureListener onFailure = WorkerFailureListener.NONE;
  private final PoolConfig config;

  public DispatcherHarness(PoolConfig config) {
    this(config, new ManualClock(), Runnable::run);
  }

  public DispatcherHarness(PoolConfig config, ManualClock clock, Executor executor) {
    this(config, clock, executor, null);
  }

  /** A pool of one model of {@code signature} (null: only scalars, known by their rank, go to the model whole). */
  public DispatcherHarness(PoolConfig config, io.kiln.pools.ModelSignature signature) {
    this(config, new ManualClock(), Runnable::run, signature);
  }

  private DispatcherHarness(PoolConfig config, ManualClock clock, Executor executor,
                            io.kiln.pools.ModelSignature signature) {
    this.config = config;
    this.clock = clock;
    this.dispatcher = new PoolDispatcher(config, clock, clock, executor,
        (id, cause) -> {
          failures.add(Map.entry(id, cause));
          onFailure.workerFailed(id, cause);
        }, registry, PoolDispatcher.meterTags("mlp", "1", "node-a"), request -> { }, null,
        io.kiln.pools.trace.Spans.OFF, signature);
  }

  public TestWorker addWorker(String id) {
    TestWorker w = new TestWorker(id);
    dispatcher.addWorker(w);
    return w;
  }

  /** Submits {@link Requests#request(String, int)} with the default timeout. */
  public CompletableFuture<List<Tensor>> submit(String id, int rows) {
    return dispatcher.submit(Requests.request(id, rows));
  }

  public CompletableFuture<List<Tensor>> submit(InferenceRequest request) {
    return dispatcher.submit(request);
  }

  /** Submits {@link Requests#request(String, int)} with the default timeout, withdrawn when {@code token} is cancelled. */
  public CompletableFuture<List<Tensor>> submit(String id, int rows, io.kiln.pools.Cancellation token) {
    return submit(id, rows, io.kiln.pools.RequestContext.Priority.NORMAL, token);
  }

  /** Submits {@link Requests#request(String, int)} with the default timeout at {@code priority}. */
  public CompletableFuture<List<Tensor>> submit(String id, int rows, io.kiln.pools.RequestContext.Priority priority,
                                                io.kiln.pools.Cancellation token) {
    return dispatcher.submit(Requests.request(id, rows), io.kiln.pools.RequestContext.of(id,
        clock.getAsLong() + config.defaultTimeout().toNanos(), null, priority, token), false, null);
  }

  public CompletableFuture<List<Tensor>> submit(String id, int rows, Duration timeout) {
    return dispatcher.submit(Requests.request(id, rows), clock.getAsLong() + timeout.toNanos());
  }

  public PoolStats stats() {
    return dispatcher.stats();
  }

  /** Count of {@code kiln.pool.requests} with the given outcome tag. */
  public double outcomes(String outcome) {
    var c = registry.find("kiln.pool.requests").tag("outcome", outcome).counter();
    return c == null ? 0 : c.count();
  }

  public PoolConfig config() {
    return config;
  }

  @Override
  public void close() {
    dispatcher.close();
  }
}
