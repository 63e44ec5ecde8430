package io.kiln.serve.controller;

import static io.kiln.runtime.testing.Await.result;

import io.kiln.pools.ModelWorker;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Holds a pool worker's only thread in a call, as a model stuck in a batch would: the worker's mailbox
 * backs up behind it (the batch its manager sends next waits there, the worker counts as busy) until the
 * test releases it. The call runs in-process (the runtime passes the method reference by reference), so
 * the latches can live in a static map keyed per use.
 */
final class WorkerBlocker implements AutoCloseable {

  private record Gate(CountDownLatch entered, CountDownLatch release) {
  }

  private static final Map<String, Gate> GATES = new ConcurrentHashMap<>();

  private final String key = UUID.randomUUID().toString();
  private final Gate gate = new Gate(new CountDownLatch(1), new CountDownLatch(1));
  private final CompletionStage<Boolean> held;

  private WorkerBlocker(ActorHandle<ModelWorker> worker) {
    GATES.put(key, gate);
    held = worker.withTimeout(Duration.ofMinutes(5)).call(WorkerBlocker::hold, key);
  }

  /** Blocks worker {@code index} of the pool and returns once its thread is held. */
  static WorkerBlocker block(KilnRuntime via, String deployment, String version, String node, int index) {
    ActorHandle<ModelWorker> worker = result(via.getActor(PoolManager.NAMESPACE,
        PoolNames.worker(deployment, version, node, index), ModelWorker.class));
    WorkerBlocker b = new WorkerBlocker(worker);
    try {
      if (!b.gate.entered().await(60, TimeUnit.SECONDS)) {
        throw new AssertionError("worker " + index + " of " + deployment + "@" + version + " never ran the blocker");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    return b;
  }

  private static boolean hold(ModelWorker worker, String key) throws InterruptedException {
    Gate g = GATES.get(key);
    g.entered().countDown();
    return g.release().await(2, TimeUnit.MINUTES);
  }

  /** The blocking call's outcome: fails with ActorDiedException when the worker was killed under it. */
  CompletionStage<Boolean> held() {
    return held;
  }

  void release() {
    gate.release().countDown();
  }

  @Override
  public void close() {
    release();
    GATES.remove(key);
  }
}
