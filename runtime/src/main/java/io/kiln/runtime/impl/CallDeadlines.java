package io.kiln.runtime.impl;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The deadlines of one actor's local calls, kept without a timer per call: the cell holds one wake-up, at
 * the earliest deadline it has seen; on waking it fails every local call past its deadline (queued or
 * running: a running call is not interrupted, and a queued one still runs, its answer going nowhere, as
 * with an event-bus request whose timer fired) and sets the next wake-up at the earliest deadline left.
 * With one timeout per handle, deadlines arrive in increasing order, so a steady stream of calls costs
 * one comparison per call and one wake-up per timeout period.
 *
 * <p>Threading: confined to the cell's event loop; {@link Wakeups} must run its task there.
 */
final class CallDeadlines {

  /** Runs a task on the cell's event loop after a delay. */
  interface Wakeups {
    void after(long delayMillis, Runnable task);
  }

  private final Collection<Invocation> waiting;
  private final Collection<Invocation> running;
  private final LongSupplier nanoClock;
  private final Wakeups wakeups;
  /** When the live wake-up is due; {@link Long#MAX_VALUE} if none. */
  private long wakeAt = Long.MAX_VALUE;
  /** Numbers wake-ups: one superseded by an earlier one does nothing when it comes. */
  private int wakeup;

  /**
   * @param waiting the cell's mailbox and {@code running} its calls in progress (read, never changed)
   * @param nanoClock the clock deadlines are written in
   */
  CallDeadlines(Collection<Invocation> waiting, Collection<Invocation> running, LongSupplier nanoClock,
                Wakeups wakeups) {
    this.waiting = waiting;
    this.running = running;
    this.nanoClock = nanoClock;
    this.wakeups = wakeups;
  }

  /** A call joined the mailbox: wake earlier if it is due before anything seen so far. */
  void added(Invocation inv) {
    if (inv.deadline < wakeAt) {
      wakeAt(inv.deadline);
    }
  }

  private void wakeAt(long at) {
    wakeAt = at;
    int n = ++wakeup;
    long delayMillis = Math.max(1, (at - nanoClock.getAsLong() + 999_999) / 1_000_000);
    wakeups.after(delayMillis, () -> woke(n));
  }

  private void woke(int n) {
    if (n == wakeup) {
      wakeAt = Long.MAX_VALUE;
      expire();
    }
  }

  /** Fails the local calls past their deadline and schedules the next wake-up; returns how many failed. */
  int expire() {
    long now = nanoClock.getAsLong();
    long next = Long.MAX_VALUE;
    List<Invocation> due = new ArrayList<>();
    for (Collection<Invocation> calls : List.of(waiting, running)) {
      for (Invocation inv : calls) {
        if (!inv.isLocal() || inv.deadline == Long.MAX_VALUE || inv.answered()) {
          continue;
        }
        if (inv.deadline - now <= 0) {
          due.add(inv);
        } else {
          next = Math.min(next, inv.deadline);
        }
      }
    }
    due.forEach(Invocation::expire);
    if (next < wakeAt) {
      wakeAt(next);
    }
    return due.size();
  }
}
