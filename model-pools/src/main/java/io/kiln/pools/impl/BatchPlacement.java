package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import java.util.ArrayList;
import java.util.List;

/**
 * Where a {@link PoolDispatcher}'s queue goes next: while a worker is idle, the head's batch goes to it when
 * {@link BatchFormer} says the batch is ready (the most recently used idle worker; in a multiplexed pool, the one
 * {@link ModelAffinity} chooses, the head then being the request it chose), else the batch timer is armed for when it
 * will be; a stream goes to the idle lane {@link StreamPlacement} chooses (its prompt prefix's worker, else the least
 * loaded one); with a parallelism set, a partial batch waits for a busy worker instead of starting another beside it
 * (see {@link PoolDispatcher#limitParallelism}). In a sequence pool ({@link PoolDispatcher#pinToWorkers}) each idle
 * worker takes the oldest batch pinned to it instead. The dead requests it unlinks from the queue's front on the way
 * (cancelled, or past their deadline) are settled at the end of each pass.
 *
 * <p>Not thread-safe: the dispatcher's thread only; {@link BatchRuns} hands the batches to the workers.
 */
final class BatchPlacement {

  private final BatchFormer former;
  private final RequestQueue queue;
  private final WorkerSet workers;
  private final ModelAffinity affinity; // null in a pool of one model
  private final BatchRuns runs;
  private final Settlements settlements;
  private final BatchTimer timer;
  private final StreamPlacement streams;
  private final List<PendingRequest> dead = new ArrayList<>();
  /** How many batches can usefully run at once; see {@link PoolDispatcher#limitParallelism}. */
  private int parallelism = Integer.MAX_VALUE;
  /** A sequence pool: every request is pinned to the worker holding its sequence's state. */
  private boolean pinned;

  /** @param timer fires when the head's batch is due (the dispatcher then brings itself to rest) */
  BatchPlacement(BatchFormer former, RequestQueue queue, WorkerSet workers, ModelAffinity affinity, BatchRuns runs,
                 Settlements settlements, BatchTimer timer) {
    this.former = former;
    this.queue = queue;
    this.workers = workers;
    this.affinity = affinity;
    this.runs = runs;
    this.settlements = settlements;
    this.timer = timer;
    this.streams = new StreamPlacement(workers);
  }

  void limitParallelism(int batches) {
    parallelism = batches;
  }

  void pinToWorkers() {
    pinned = true;
  }

  /** Stops the batch timer for good (the pool closed). */
  void stop() {
    timer.disarm();
  }

  /**
   * Dispatches every batch that may go at {@code now}, arms the batch timer for the next one that is not ready (or
   * disarms it when none waits for it), and settles the dead requests found on the way.
   *
   * @param draining whether the pool drains: batches go without waiting to fill
   */
  void dispatchReady(long now, boolean draining) {
    if (pinned) {
      dispatchPinned(now, draining);
      return;
    }
    boolean armed = false;
    while (true) {
      PendingRequest head = former.liveHead(queue, now, dead);
      if (head == null || !workers.hasIdle()) {
        break;
      }
      ModelAffinity.Choice choice = null;
      if (affinity != null) {
        choice = affinity.choose(queue, head, workers.idle(), now);
        if (choice == null) {
          break; // every queued model waits for a load, a busy holder or a load slot: a batch's end re-runs this
        }
        head = choice.request();
      }
      if (!former.isReady(queue, head, now, draining)) {
        timer.arm(former.dueAt(head), now);
        armed = true;
        break;
      }
      if (choice == null && former.holdsPartial(queue, head, workers.busyCount(), parallelism, runs.batchNanos(), now,
          draining)) {
        timer.arm(head.enqueuedNanos + runs.batchNanos(), now); // a batch's end re-runs this sooner, normally
        armed = true;
        break;
      }
      WorkerSlot lane = choice == null && head.stream != null
          ? streams.choose(io.kiln.pools.PrefixAffinity.keys(head.request)) : null;
      List<PendingRequest> batch = former.take(queue, head, now, dead);
      if (lane != null) {
        runs.dispatch(workers.takeIdle(lane, batch, now), batch, now);
      } else if (choice == null) {
        runs.dispatch(workers.takeIdle(batch, now), batch, now);
      } else {
        affinity.dispatched(choice.worker().id(), head.key.model(), choice.miss());
        runs.dispatch(workers.takeIdle(choice.worker(), batch, now), batch, now);
      }
    }
    if (!armed) {
      timer.disarm();
    }
    settleDead();
  }

  /**
   * A sequence pool's pass: each idle worker takes the batch headed by the first live request pinned to it (requests
   * of other workers keep their places), so one worker's sequences never wait behind another's.
   */
  private void dispatchPinned(long now, boolean draining) {
    former.liveHead(queue, now, dead);
    List<WorkerSlot> idle = new ArrayList<>();
    workers.idle().forEach(idle::add);
    long due = 0;
    boolean waits = false;
    for (WorkerSlot w : idle) {
      PendingRequest first = null;
      for (PendingRequest p = queue.peek(); p != null; p = p.next) {
        if (w.id().equals(p.pin) && !p.isDead(now)) {
          first = p;
          break;
        }
      }
      if (first == null || w.state != WorkerSlot.State.IDLE) {
        continue;
      }
      if (!former.isReady(queue, first, now, draining)) {
        due = waits && due - former.dueAt(first) < 0 ? due : former.dueAt(first);
        waits = true;
        continue;
      }
      List<PendingRequest> batch = former.take(queue, first, now, dead);
      runs.dispatch(workers.takeIdle(w, batch, now), batch, now);
    }
    if (waits) {
      timer.arm(due, now);
    } else {
      timer.disarm();
    }
    settleDead();
  }

  private void settleDead() {
    for (PendingRequest p : dead) {
      if (p.cancelled()) {
        settlements.withdrawn(p);
      } else {
        settlements.settle(p, Outcome.EXPIRED, null, InferenceException.deadlineExceeded("deadline passed while queued"));
      }
    }
    dead.clear();
  }
}
