package io.kiln.runtime.impl;

import io.kiln.runtime.Futures;
import io.kiln.runtime.InfeasibleResourcesException;
import io.kiln.runtime.PlacementTimeoutException;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.scheduling.Placement;
import io.kiln.runtime.scheduling.PlacementRequest;
import io.vertx.core.Context;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * Places actors and tasks: ranks nodes with the {@link io.kiln.runtime.scheduling.Scheduler}'s policy over
 * the current cluster view (answered by {@link ClusterViews#place} from its index), asks
 * each ranked node's agent in turn (spilling back when one refuses because resources moved), and parks
 * requests that are feasible but do not fit now in a FIFO queue that is retried whenever resources are
 * released or the node table changes, until their placement timeout. Infeasible requests fail at once.
 *
 * <p>Retries on change are coalesced: at most one pass over the queue per {@link #KICK_INTERVAL_MS} (the
 * first change after a quiet interval retries at once). Every row any node writes is a change here, and a
 * cluster of 1,000 nodes writes up to 10,000 rows a second; without the bound each one would re-place
 * every waiting request.
 *
 * <p>Threading: all queue work runs on one Vert.x context, so attempts start in arrival order.
 */
final class Placer {

  private static final long RETRY_PERIOD_MS = 250;
  /** The most often changes elsewhere make the queue retry. */
  static final long KICK_INTERVAL_MS = 20;

  private final Context context;
  private final Function<PlacementRequest, Placement> scheduler;
  private final LinkedList<Entry<?>> pending = new LinkedList<>();
  private long sequence;
  private long retryTimer = -1;
  /** A retry for changes is scheduled and has not started yet (set from any thread). */
  private final java.util.concurrent.atomic.AtomicBoolean kickRequested = new java.util.concurrent.atomic.AtomicBoolean();
  private long lastKickNanos = System.nanoTime() - KICK_INTERVAL_MS * 1_000_000;

  private final class Entry<T> {
    final PlacementRequestBase base;
    final Function<String, CompletionStage<T>> attempt;
    final CompletableFuture<T> result = new CompletableFuture<>();
    final long deadlineMs;
    boolean busy;
    /** The timeout passed while a node was working on it: only a refusal may now end it with a timeout. */
    boolean expired;
    String lastReason = "no attempt yet";

    Entry(PlacementRequestBase base, Function<String, CompletionStage<T>> attempt, long deadlineMs) {
      this.base = base;
      this.attempt = attempt;
      this.deadlineMs = deadlineMs;
    }
  }

  private record PlacementRequestBase(Resources resources, SchedulingStrategy strategy, String what) {
  }

  /** @param scheduler the placement policy over the current view; pure apart from reading that view */
  Placer(Context context, Function<PlacementRequest, Placement> scheduler) {
    this.context = context;
    this.scheduler = scheduler;
  }

  /**
   * Places one request: {@code attempt} is called with a node id and must fail with
   * {@link PlacementRefusedException} (or a no-handlers reply) when that node cannot take it.
   */
  <T> CompletionStage<T> place(Resources resources, SchedulingStrategy strategy, Duration timeout, String what,
                               Function<String, CompletionStage<T>> attempt) {
    Entry<T> e = new Entry<>(new PlacementRequestBase(resources, strategy, what), attempt,
        System.currentTimeMillis() + timeout.toMillis());
    context.runOnContext(v -> {
      pending.add(e);
      context.owner().setTimer(Math.max(1, timeout.toMillis()), id -> expire(e));
      tryEntry(e);
      ensureRetryTimer();
    });
    return e.result;
  }

  /** Resources were released somewhere: retry what waits, now or within the interval. Callable from any thread. */
  void resourcesChanged() {
    if (kickRequested.compareAndSet(false, true)) {
      context.runOnContext(v -> {
        long waitMs = KICK_INTERVAL_MS - (System.nanoTime() - lastKickNanos) / 1_000_000;
        if (waitMs <= 0) {
          changedKick();
        } else {
          context.owner().setTimer(waitMs, id -> changedKick());
        }
      });
    }
  }

  private void changedKick() {
    kickRequested.set(false); // changes from now on ask for the next pass
    lastKickNanos = System.nanoTime();
    kick();
  }

  private void kick() {
    for (Entry<?> e : new ArrayList<>(pending)) {
      tryEntry(e);
    }
  }

  private void ensureRetryTimer() {
    if (retryTimer < 0 && !pending.isEmpty()) {
      retryTimer = context.owner().setPeriodic(RETRY_PERIOD_MS, id -> {
        if (pending.isEmpty()) {
          context.owner().cancelTimer(retryTimer);
          retryTimer = -1;
        } else {
          kick();
        }
      });
    }
  }

  private <T> void tryEntry(Entry<T> e) {
    if (e.busy || e.result.isDone()) {
      return;
    }
    PlacementRequest req = new PlacementRequest(e.base.resources(), e.base.strategy(), sequence++);
    Placement p = scheduler.apply(req);
    if (p instanceof Placement.Infeasible inf) {
      finish(e, null, new InfeasibleResourcesException(e.base.what() + " is infeasible: " + inf.reason()));
    } else if (p instanceof Placement.Pending pend) {
      e.lastReason = pend.reason();
    } else if (p instanceof Placement.Ranked ranked) {
      e.busy = true;
      attemptNodes(e, ranked.nodeIds(), 0);
    }
  }

  private <T> void attemptNodes(Entry<T> e, List<String> nodes, int i) {
    if (e.result.isDone()) {
      return;
    }
    if (i >= nodes.size() || e.expired) {
      e.busy = false; // every candidate refused: stay queued until resources change
      if (e.expired) {
        expire(e);
      }
      return;
    }
    String node = nodes.get(i);
    CompletionStage<T> attempt;
    try {
      attempt = e.attempt.apply(node);
    } catch (RuntimeException ex) {
      finish(e, null, ex);
      return;
    }
    attempt.whenComplete((r, err) -> context.runOnContext(v -> {
      Throwable cause = err == null ? null : Futures.unwrap(err);
      if (cause != null && refused(cause)) {
        e.lastReason = cause.getMessage();
        attemptNodes(e, nodes, i + 1);
      } else {
        finish(e, r, cause);
      }
    }));
  }

  private static boolean refused(Throwable t) {
    return t instanceof PlacementRefusedException || CallPath.actorGone(t);
  }

  private void expire(Entry<?> e) {
    if (e.busy) {
      e.expired = true; // a node accepted or is deciding; construction time does not count as waiting
      return;
    }
    if (!e.result.isDone()) {
      finish(e, null, new PlacementTimeoutException(e.base.what() + " waited longer than its placement timeout for "
          + e.base.resources() + ": " + e.lastReason));
    }
  }

  @SuppressWarnings("unchecked")
  private <T> void finish(Entry<T> e, Object value, Throwable error) {
    for (Iterator<Entry<?>> it = pending.iterator(); it.hasNext(); ) {
      if (it.next() == e) {
        it.remove();
        break;
      }
    }
    if (error != null) {
      e.result.completeExceptionally(error);
    } else {
      e.result.complete((T) value);
    }
    if (!pending.isEmpty()) {
      kick(); // a finished attempt may have been what held the others back
    }
  }
}
