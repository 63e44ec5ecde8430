package io.kiln.runtime.time;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One thread's deadlines (or, {@linkplain #locked locked}, those of every thread off an event loop), with at most
 * one armed timer, for the earliest. The entries are kept in up to {@link #LANES} doubly linked lanes, each ordered
 * by deadline: deadlines of one timeout come in order, and those of a few timeouts (a gateway call's and the pool
 * call it makes, a little later) interleave, so an entry is appended to the lane whose last deadline is the latest
 * not after its own, O(1) for each of a few timeouts in one list; only a deadline earlier than every lane's last is
 * inserted from a tail back. An entry settled in time unlinks itself, O(1).
 *
 * <p>The timer is re-armed earlier only when an earlier deadline becomes the earliest. When it fires, every entry
 * due by then expires, in deadline order, and it waits again for the earliest left, so under steady load it fires
 * about once per timeout period. An entry leaving never cancels it, not even the last: with one request in flight
 * at a time that would arm and cancel a timer per request, which is what the list exists to avoid. Left armed on an
 * empty list the timer fires once more, finds nothing due and is not re-armed, so an idle list holds none after its
 * earliest deadline has passed; {@link #clear} stops it at once.
 *
 * <p>Not thread-safe: touched only on its owner's thread (its event loop's, when it has one); a locked list on
 * any thread, under its own monitor: {@link #insertLocked}, {@link #removeLocked}, and its firing, which expires the
 * entries due outside the monitor.
 */
final class DeadlineList {

  /** Interleaved in-order runs kept apart: a request's own deadlines and the few timeouts of its hops. */
  static final int LANES = 4;

  private final Timers timers;
  private final LongSupplier clock;
  private final Runnable afterExpiries;
  /**
   * The event-loop thread it belongs to; null for a list confined by its owner, or a locked one. A thread, not a
   * context: the list lives in the root context's data, which its duplicated contexts (one per HTTP request, in
   * Vert.x) share, so an entry added on one request's context is removed on another's, on the same thread.
   */
  private final Thread thread;
  /** Whether every thread may touch it, under its monitor (off event loops). */
  final boolean locked;
  private final Deadlines.Entry[] heads = new Deadlines.Entry[LANES];
  private final Deadlines.Entry[] tails = new Deadlines.Entry[LANES];
  private int size;
  private long timer = -1;
  private long timerDeadline;
  /** Tells a stale firing (one a cancel raced with) from the current one. */
  private long generation;

  /** @param thread the event-loop thread it is confined to, or null when its owner confines it or it is locked */
  DeadlineList(Timers timers, LongSupplier clock, Runnable afterExpiries, Thread thread, boolean locked) {
    this.timers = timers;
    this.clock = clock;
    this.afterExpiries = afterExpiries;
    this.thread = thread;
    this.locked = locked;
  }

  /** Whether the calling thread may touch this (unlocked) list. */
  boolean owned() {
    return thread == null || Thread.currentThread() == thread;
  }

  int size() {
    return size;
  }

  boolean armed() {
    return timer >= 0;
  }

  synchronized void insertLocked(Deadlines.Entry e) {
    insert(e);
  }

  /** Unlinks {@code e} if it is still listed here; false if its firing took it meanwhile. */
  synchronized boolean removeLocked(Deadlines.Entry e) {
    if (e.list != this) {
      return false;
    }
    unlink(e);
    return true;
  }

  synchronized int sizeLocked() {
    return size;
  }

  synchronized boolean armedLocked() {
    return timer >= 0;
  }

  void insert(Deadlines.Entry e) {
    e.list = this;
    size++;
    int lane = laneFor(e.deadline);
    e.lane = lane;
    Deadlines.Entry after = tails[lane];
    while (after != null && after.deadline - e.deadline > 0) {
      after = after.prev;
    }
    e.prev = after;
    e.next = after == null ? heads[lane] : after.next;
    if (e.next != null) {
      e.next.prev = e;
    } else {
      tails[lane] = e;
    }
    if (after != null) {
      after.next = e;
    } else {
      heads[lane] = e;
      if (timer < 0 || timerDeadline - e.deadline > 0) {
        arm(e.deadline);
      }
    }
  }

  /**
   * The lane {@code deadline} is appended to: the one whose last deadline is the latest not after it (so each run of
   * one timeout keeps its own lane), else an empty one, else the one whose last deadline is the earliest, where
   * the walk back from the tail is shortest.
   */
  private int laneFor(long deadline) {
    int fit = -1;
    int empty = -1;
    int earliest = 0;
    for (int i = 0; i < LANES; i++) {
      Deadlines.Entry t = tails[i];
      if (t == null) {
        if (empty < 0) {
          empty = i;
        }
      } else if (t.deadline - deadline <= 0) {
        if (fit < 0 || t.deadline - tails[fit].deadline > 0) {
          fit = i;
        }
      } else if (tails[earliest] == null || tails[earliest].deadline - t.deadline > 0) {
        earliest = i;
      }
    }
    return fit >= 0 ? fit : empty >= 0 ? empty : earliest;
  }

  void unlink(Deadlines.Entry e) {
    int lane = e.lane;
    if (e.prev != null) {
      e.prev.next = e.next;
    } else {
      heads[lane] = e.next;
    }
    if (e.next != null) {
      e.next.prev = e.prev;
    } else {
      tails[lane] = e.prev;
    }
    e.prev = null;
    e.next = null;
    e.list = null;
    size--;
    // The timer stays, even for an empty list: it fires for an earlier deadline than the earliest left (or none)
    // and waits again from there, or stops; cancelling and re-arming it per request would cost more.
  }

  /** Forgets every entry without expiring it, and stops the timer (the owner closed). */
  void clear() {
    for (int i = 0; i < LANES; i++) {
      while (heads[i] != null) {
        unlink(heads[i]);
      }
    }
    disarm();
  }

  private Deadlines.Entry earliest() {
    Deadlines.Entry first = null;
    for (int i = 0; i < LANES; i++) {
      Deadlines.Entry h = heads[i];
      if (h != null && (first == null || first.deadline - h.deadline > 0)) {
        first = h;
      }
    }
    return first;
  }

  private void arm(long deadline) {
    disarm();
    long armed = ++generation;
    timerDeadline = deadline;
    timer = timers.schedule(Math.max(0, deadline - clock.getAsLong()), () -> {
      if (locked) {
        firedLocked(armed);
      } else if (armed == generation) {
        timer = -1;
        fired();
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

  private void fired() {
    long now = clock.getAsLong();
    boolean any = false;
    for (Deadlines.Entry e = earliest(); e != null && e.deadline - now <= 0; e = earliest()) {
      unlink(e);
      any = true;
      e.expired();
    }
    if (any && afterExpiries != null) {
      afterExpiries.run();
    }
    rearm();
  }

  /** A locked list's firing: what is due is taken under the monitor and expired outside it, in deadline order. */
  private void firedLocked(long armed) {
    List<Deadlines.Entry> due = null;
    synchronized (this) {
      if (armed != generation) {
        return;
      }
      timer = -1;
      long now = clock.getAsLong();
      for (Deadlines.Entry e = earliest(); e != null && e.deadline - now <= 0; e = earliest()) {
        unlink(e);
        if (due == null) {
          due = new ArrayList<>();
        }
        due.add(e);
      }
      rearm();
    }
    if (due != null) {
      for (Deadlines.Entry e : due) {
        e.expired();
      }
    }
  }

  /** After a firing: waits for the earliest entry left (early, or an expiry added one and armed the timer). */
  private void rearm() {
    if (timer < 0) {
      Deadlines.Entry first = earliest();
      if (first != null) {
        arm(first.deadline);
      }
    }
  }
}
