package io.kiln.pools.impl;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The deadlines of a dispatcher's requests, queued or executing, on one timer instead of one per request. The
 * timer is armed for the earliest deadline watched; when it fires, every request due by then goes to
 * {@code expire} at once, and the timer is re-armed for the next deadline. A timer per request cost a Vert.x
 * {@code setTimer} and a {@code cancelTimer} per request (each a task in the event loop's scheduled queue); here
 * a submit costs an append, and the timer moves only when a deadline earlier than the armed one arrives (a
 * shorter timeout) or when nothing is watched any more (then it is cancelled, so an idle pool holds no timer).
 *
 * <p>Settled requests are dropped lazily: {@link #unwatch} only counts, and the list is compacted when it holds
 * more than twice the live requests, so what it retains stays bounded by the live count. Not thread-safe: every
 * method, and {@code expire}, run on the dispatcher's thread.
 */
final class DeadlineSweep {

  private final Timers timers;
  private final LongSupplier clock;
  private final Consumer<PendingRequest> expire;
  private final Runnable afterSweep;
  private final ArrayList<PendingRequest> watched = new ArrayList<>();
  private int live;
  private long timer = -1;
  private long armedAt;
  // Tells a stale firing (a cancel raced with it) from the current one.
  private long generation;

  /**
   * @param expire told of each watched request whose deadline has passed; it must settle the request (which
   *     calls {@link #unwatch})
   * @param afterSweep run once after each sweep that expired something (the dispatcher brings itself to rest)
   */
  DeadlineSweep(Timers timers, LongSupplier clock, Consumer<PendingRequest> expire, Runnable afterSweep) {
    this.timers = timers;
    this.clock = clock;
    this.expire = expire;
    this.afterSweep = afterSweep;
  }

  /** Watches {@code p}'s deadline until {@link #unwatch}; {@code p.deadlineNanos} must be after {@code nowNanos}. */
  void watch(PendingRequest p, long nowNanos) {
    p.watched = true;
    watched.add(p);
    live++;
    if (timer < 0 || p.deadlineNanos - armedAt < 0) {
      arm(p.deadlineNanos, nowNanos);
    }
    if (watched.size() > 2 * live + 64) {
      compact();
    }
  }

  /** {@code p} settled: its deadline no longer matters. Idempotent. */
  void unwatch(PendingRequest p) {
    if (!p.watched) {
      return;
    }
    p.watched = false;
    if (--live == 0) {
      disarm();
      watched.clear();
    }
  }

  /** Stops the timer and forgets every request (the dispatcher closed). */
  void clear() {
    disarm();
    for (PendingRequest p : watched) {
      p.watched = false;
    }
    watched.clear();
    live = 0;
  }

  /** How many requests are watched (queued or executing, not settled). */
  int live() {
    return live;
  }

  /** How many requests the list holds, settled ones not yet dropped included (for tests). */
  int retained() {
    return watched.size();
  }

  private void fire() {
    long now = clock.getAsLong();
    List<PendingRequest> due = new ArrayList<>();
    long next = 0;
    boolean any = false;
    int kept = 0;
    for (int i = 0; i < watched.size(); i++) {
      PendingRequest p = watched.get(i);
      if (!p.watched) {
        continue;
      }
      if (now - p.deadlineNanos >= 0) {
        due.add(p);
      } else {
        watched.set(kept++, p);
        if (!any || p.deadlineNanos - next < 0) {
          next = p.deadlineNanos;
          any = true;
        }
      }
    }
    watched.subList(kept, watched.size()).clear();
    if (any) {
      arm(next, now); // also after an early firing, which Timers tolerates
    }
    if (!due.isEmpty()) {
      for (PendingRequest p : due) {
        expire.accept(p);
        unwatch(p); // in case expire found it settled already
      }
      afterSweep.run();
    }
  }

  private void compact() {
    watched.removeIf(p -> !p.watched);
  }

  private void arm(long atNanos, long nowNanos) {
    disarm();
    long armed = ++generation;
    armedAt = atNanos;
    timer = timers.schedule(Math.max(0, atNanos - nowNanos), () -> {
      if (armed == generation) {
        timer = -1;
        fire();
      }
    });
  }

  private void disarm() {
    if (timer >= 0) {
      timers.cancel(timer);
      timer = -1;
      generation++;
    }
  }
}
