package io.kiln.runtime.time;

import java.util.function.LongSupplier;

/**
 * One thread's deadlines, a doubly linked list ordered by deadline, with at most one armed timer, for the list's
 * head. Deadlines of one timeout come in order and are appended; a shorter one is inserted from the tail back. An
 * entry settled in time unlinks itself, O(1); the last one out cancels the timer, so an idle list holds none. The
 * timer is re-armed earlier only when an earlier deadline becomes the head; when it fires, every entry due by then
 * expires and it waits again for the new head, so under steady load it fires about once per timeout period.
 *
 * <p>Not thread-safe: touched only on its owner's thread (its event loop's, when it has one).
 */
final class DeadlineList {

  private final Timers timers;
  private final LongSupplier clock;
  private final Runnable afterExpiries;
  /**
   * The event-loop thread it belongs to; null for a list confined by its owner. A thread, not a context: the list
   * lives in the root context's data, which its duplicated contexts (one per HTTP request, in Vert.x) share, so an
   * entry added on one request's context is removed on another's, on the same thread.
   */
  private final Thread thread;
  private Deadlines.Entry head;
  private Deadlines.Entry tail;
  private int size;
  private long timer = -1;
  private long timerDeadline;
  /** Tells a stale firing (one a cancel raced with) from the current one. */
  private long generation;

  /** @param thread the event-loop thread it is confined to, or null when its owner confines it */
  DeadlineList(Timers timers, LongSupplier clock, Runnable afterExpiries, Thread thread) {
    this.timers = timers;
    this.clock = clock;
    this.afterExpiries = afterExpiries;
    this.thread = thread;
  }

  /** Whether the calling thread may touch this list. */
  boolean owned() {
    return thread == null || Thread.currentThread() == thread;
  }

  int size() {
    return size;
  }

  boolean armed() {
    return timer >= 0;
  }

  void insert(Deadlines.Entry e) {
    e.list = this;
    size++;
    Deadlines.Entry after = tail;
    while (after != null && after.deadline - e.deadline > 0) {
      after = after.prev;
    }
    e.prev = after;
    e.next = after == null ? head : after.next;
    if (e.next != null) {
      e.next.prev = e;
    } else {
      tail = e;
    }
    if (after != null) {
      after.next = e;
    } else {
      head = e;
      if (timer < 0 || timerDeadline - e.deadline > 0) {
        arm(e.deadline);
      }
    }
  }

  void unlink(Deadlines.Entry e) {
    if (e.prev != null) {
      e.prev.next = e.next;
    } else {
      head = e.next;
    }
    if (e.next != null) {
      e.next.prev = e.prev;
    } else {
      tail = e.prev;
    }
    e.prev = null;
    e.next = null;
    e.list = null;
    if (--size == 0) {
      disarm();
    }
    // Otherwise the timer stays: it fires for an earlier deadline than the new head's and waits again from there.
  }

  /** Forgets every entry without expiring it, and stops the timer (the owner closed). */
  void clear() {
    while (head != null) {
      unlink(head);
    }
    disarm();
  }

  private void arm(long deadline) {
    disarm();
    long armed = ++generation;
    timerDeadline = deadline;
    timer = timers.schedule(Math.max(0, deadline - clock.getAsLong()), () -> {
      if (armed == generation) {
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
    while (head != null && head.deadline - now <= 0) {
      Deadlines.Entry e = head;
      unlink(e);
      any = true;
      e.expired();
    }
    if (any && afterExpiries != null) {
      afterExpiries.run();
    }
    if (head != null && timer < 0) { // early (a manual clock), or an expiry added an entry and armed the timer
      arm(head.deadline);
    }
  }
}
