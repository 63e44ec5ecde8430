package io.kiln.gateway.impl;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The deadlines of the calls in flight, one list and at most one Vert.x timer per event-loop context, instead of a
 * timer armed and cancelled per call (the last profile charged ≈2.8 % of an identity request's event-loop samples
 * to the two per-request timers, this one and the pool's: a timer's allocation, its scheduling on Netty's queue,
 * its cancellation).
 *
 * <p>Each context keeps its calls in a doubly linked list ordered by deadline: a call with the default timeout is
 * appended (deadlines then come in order); a shorter one, from a client's timeout hint, is inserted from the tail
 * back. A call answered in time unlinks itself, O(1). The one timer waits for the list's head; when it fires it
 * expires every call whose deadline passed and waits again for the new head, so under steady load it fires about
 * once per timeout period. It is re-armed earlier only when a call with an earlier deadline becomes the head.
 * A call expires when its deadline is reached, within the timer's millisecond rounding, as a timer of its own did.
 *
 * <p>{@link #add} and {@link Entry#remove} run on the context's thread (the dispatcher's calls start, end and time
 * out there); off an event loop, a call gets a timer of its own as before.
 */
final class CallDeadlines {

  /** One call's deadline; {@link #remove()} takes it off (idempotent). */
  abstract static class Entry {
    private Loop loop; // while listed
    private Entry prev;
    private Entry next;
    private long deadline;
    private Vertx timerOwner; // with a timer of its own, off an event loop
    private long timer = -1;

    /** The deadline passed: fail the call. Runs on the context the entry was added on. */
    abstract void expired();

    final void remove() {
      if (timer >= 0) {
        timerOwner.cancelTimer(timer);
        timer = -1;
      } else if (loop != null) {
        loop.unlink(this);
      }
    }
  }

  private final Vertx vertx;
  private final LongSupplier nanoClock;
  private final Object key = new Object(); // this instance's loop in each context's data

  /** @param nanoClock monotonic nanoseconds, the clock deadlines are kept on (Vert.x timers wake it up) */
  CallDeadlines(Vertx vertx, LongSupplier nanoClock) {
    this.vertx = vertx;
    this.nanoClock = nanoClock;
  }

  /** Expires {@code e} at {@code deadline} (on {@link #nanoClock}), {@code timeoutMillis} from now. */
  void add(Context context, Entry e, long deadline, long timeoutMillis) {
    if (!context.isEventLoopContext() || Vertx.currentContext() != context) {
      e.timerOwner = vertx;
      e.timer = vertx.setTimer(Math.max(1, timeoutMillis), id -> {
        e.timer = -1;
        e.expired();
      });
      return;
    }
    Loop l = context.get(key);
    if (l == null) {
      l = new Loop();
      context.put(key, l);
    }
    e.deadline = deadline;
    l.insert(e);
  }

  /** One context's calls by deadline, and its one timer. Touched only on the context's thread. */
  private final class Loop {
    private Entry head;
    private Entry tail;
    private long timer = -1;
    private long timerDeadline;

    void insert(Entry e) {
      e.loop = this;
      Entry after = tail;
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

    void unlink(Entry e) {
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
      e.loop = null;
      // The timer stays: it fires for an earlier deadline than the new head's and waits again from there.
    }

    private void arm(long deadline) {
      if (timer >= 0) {
        vertx.cancelTimer(timer);
      }
      long left = deadline - nanoClock.getAsLong();
      timerDeadline = deadline;
      timer = vertx.setTimer(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left + 999_999)), id -> fired());
    }

    private void fired() {
      timer = -1;
      long now = nanoClock.getAsLong();
      while (head != null && head.deadline - now <= 0) {
        Entry e = head;
        unlink(e);
        e.expired();
      }
      if (head != null && timer < 0) { // an expiry may have added a call, and armed the timer itself
        arm(head.deadline);
      }
    }
  }
}
