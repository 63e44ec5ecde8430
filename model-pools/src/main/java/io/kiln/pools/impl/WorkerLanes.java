package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelWorker;
import io.kiln.pools.Tensor;
import io.kiln.pools.trace.RequestTrace;
import io.kiln.runtime.ActorLane;
import io.kiln.runtime.KilnRuntime;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The direct batch channels of a node's model workers, by worker name: each worker publishes its incarnation's
 * {@link ActorLane} here as it loads, so that its pool manager on the same node hands a batch straight to the model's
 * thread (one queued hand-off) instead of calling the worker actor (its mailbox on an event loop, the thread, and
 * back: four). The worker actor keeps its name, placement, restarts and health; a restart publishes the new
 * incarnation's lane over the old one, and a lane whose incarnation ended is never handed out. A worker found here is
 * on this node; any other (none is today, but a manager does not assume it) is called through its actor.
 *
 * <p>One per node: {@link #of} gets or creates it as the runtime's local service. Thread-safe, non-blocking.
 */
public final class WorkerLanes {

  /** One worker incarnation's channel: its lane and the instance whose {@link ModelWorker#infer} runs there. */
  public static final class Lane {
    private final ActorLane lane;
    private final ModelWorker worker;

    public Lane(ActorLane lane, ModelWorker worker) {
      this.lane = lane;
      this.worker = worker;
    }

    /**
     * Runs {@link ModelWorker#infer} on the worker's thread; completes there, with what it returned or threw, or
     * with {@code ActorDiedException} when the incarnation ended first.
     */
    CompletableFuture<List<List<Tensor>>> infer(List<InferenceRequest> batch, List<RequestTrace> traces) {
      return lane.submit(() -> worker.infer(batch, traces));
    }
  }

  private final Map<String, Lane> byName = new ConcurrentHashMap<>();

  /** The lanes of {@code runtime}'s node, created on first use. */
  public static WorkerLanes of(KilnRuntime runtime) {
    synchronized (WorkerLanes.class) {
      return runtime.localService(WorkerLanes.class).orElseGet(() -> {
        WorkerLanes lanes = new WorkerLanes();
        runtime.registerLocalService(WorkerLanes.class, lanes);
        return lanes;
      });
    }
  }

  /** Publishes worker {@code name}'s lane, replacing its previous incarnation's. */
  public void publish(String name, Lane lane) {
    byName.put(name, lane);
  }

  /** Withdraws {@code lane} if it is still worker {@code name}'s (a newer incarnation's stays). */
  public void withdraw(String name, Lane lane) {
    byName.remove(name, lane);
  }

  /** Worker {@code name}'s live lane, or null (not on this node, not loaded yet, or its incarnation ended). */
  Lane get(String name) {
    Lane l = byName.get(name);
    return l != null && l.lane.live() ? l : null;
  }
}
