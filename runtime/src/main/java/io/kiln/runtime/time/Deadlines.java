package io.kiln.runtime.time;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.function.LongSupplier;

/**
 * The runtime's one timer facility for deadlines: many deadlines on few timers. Every deadline a request meets on
 * its way (the gateway's call, an actor's local call, a pool's queued or executing request) is an {@link Entry}
 * here rather than a Vert.x timer armed and cancelled per request, which cost a timer allocation, a task on the
 * event loop's scheduled queue and its cancellation, per request and per layer.
 *
 * <p>Per Vert.x event-loop context ({@link #create}) or per confined owner ({@link #confined}) the entries form one
 * list ordered by deadline, watched by at most one armed timer, for the earliest: an entry with the usual timeout
 * is appended (deadlines of one timeout come in order), a shorter one is inserted from the tail back, an entry
 * settled in time unlinks itself in O(1), and the timer is re-armed only when an earlier deadline becomes the
 * head. When it fires, every entry due by then {@linkplain Entry#expired expires}, in deadline order, and it waits
 * for the new head; the last entry out cancels it, so nothing idle holds a timer. An entry expires when its
 * deadline is reached, within the timer's millisecond rounding (never early), as a timer of its own would.
 *
 * <p>Threading: {@link #add} runs on the thread that owns the entry. With {@link #create}, on an event-loop
 * context the entry joins that context's list and {@link Entry#expired} runs there; off an event loop (a worker
 * context, a thread of no context) the entry gets a Vert.x timer of its own, and {@code expired} runs on whatever
 * context Vert.x gives that timer. With {@link #confined}, every call, and {@code expired}, run on the owner's
 * thread, which the {@link Timers} given run their tasks on. Nothing here blocks.
 *
 * <p>Deadlines are absolute times on the injected nano clock ({@code System::nanoTime} in production; tests
 * inject their own). Crossing a process boundary a deadline travels as the time left, never as a clock reading.
 */
public final class Deadlines {

  /** One deadline; subclass it where the thing that can time out lives (a call, a request: no wrapper). */
  public abstract static class Entry {
    DeadlineList list; // while listed
    Entry prev;
    Entry next;
    long deadline;
    private Vertx timerOwner; // with a timer of its own, off an event loop
    private long timer = -1;

    /**
     * The deadline passed: fail what waits. Runs on the owner's thread (see {@link Deadlines}), at most once
     * per {@link #add}; never after a successful {@link #remove()}. The entry is already off the list, so this
     * may add it again.
     */
    protected abstract void expired();

    /**
     * Stops watching this deadline (the thing settled in time). On the thread that added it this always works;
     * called on another thread for an entry on an event-loop context's list it does nothing and returns false:
     * the entry then stays listed until its deadline, when {@link #expired} runs and must find it settled.
     *
     * @return whether the entry was watched and now is not
     */
    public final boolean remove() {
      if (timer >= 0) {
        long t = timer;
        timer = -1;
        return timerOwner.cancelTimer(t);
      }
      if (list != null && list.owned()) {
        list.unlink(this);
        return true;
      }
      return false;
    }

    /** Whether the deadline is watched (added, neither expired nor removed). Read it on the owner's thread. */
    public final boolean watched() {
      return list != null || timer >= 0;
    }

    /** The deadline it was last added with, on the facility's clock. */
    public final long deadline() {
      return deadline;
    }
  }

  private final Vertx vertx;
  private final LongSupplier clock;
  private final Timers contextTimers;
  /** The one list of a confined facility; null for a per-context one. */
  private final DeadlineList confined;
  private final Object key = new Object(); // this facility's list in each context's data

  private Deadlines(Vertx vertx, LongSupplier clock, DeadlineList confined) {
    this.vertx = vertx;
    this.clock = clock;
    this.confined = confined;
    this.contextTimers = vertx == null ? null : new Timers() {
      @Override
      public long schedule(long delayNanos, Runnable task) {
        return vertx.setTimer(millisUp(delayNanos), id -> task.run());
      }

      @Override
      public void cancel(long id) {
        vertx.cancelTimer(id);
      }
    };
  }

  /**
   * Deadlines on {@code vertx}: one list and at most one timer per event-loop context that adds to it.
   *
   * @param nanoClock monotonic nanoseconds, the clock deadlines are written in (Vert.x timers wake it up)
   */
  public static Deadlines create(Vertx vertx, LongSupplier nanoClock) {
    return new Deadlines(vertx, nanoClock, null);
  }

  /**
   * Deadlines of one owner that runs on one thread (a dispatcher on its context): one list, woken by {@code
   * timers}, whose tasks must run on that thread.
   *
   * @param afterExpiries run once after each firing that expired something (the owner brings itself to rest);
   *     may be null
   */
  public static Deadlines confined(Timers timers, LongSupplier nanoClock, Runnable afterExpiries) {
    return new Deadlines(null, nanoClock, new DeadlineList(timers, nanoClock, afterExpiries, null));
  }

  /** The clock deadlines are written in. */
  public LongSupplier clock() {
    return clock;
  }

  /**
   * Watches {@code e} until {@code deadlineNanos} (on {@link #clock()}), when it {@linkplain Entry#expired
   * expires} unless {@linkplain Entry#remove removed} first. A deadline already passed expires on the next
   * firing, never synchronously. {@code e} must not be watched already.
   */
  public void add(Entry e, long deadlineNanos) {
    if (e.watched()) {
      throw new IllegalStateException("deadline already watched");
    }
    e.deadline = deadlineNanos;
    if (confined != null) {
      confined.insert(e);
      return;
    }
    Context context = Vertx.currentContext();
    if (context == null || !context.isEventLoopContext() || !Context.isOnEventLoopThread()) {
      long left = deadlineNanos - clock.getAsLong();
      e.timerOwner = vertx;
      e.timer = vertx.setTimer(millisUp(left), id -> {
        e.timer = -1;
        e.expired();
      });
      return;
    }
    DeadlineList l = context.get(key);
    if (l == null) {
      l = new DeadlineList(contextTimers, clock, null, Thread.currentThread());
      context.put(key, l);
    }
    l.insert(e);
  }

  /**
   * Forgets every watched entry without expiring it and stops the timer (the owner closed); confined only, on the
   * owner's thread.
   */
  public void clear() {
    if (confined == null) {
      throw new IllegalStateException("clear() is for a confined facility");
    }
    confined.clear();
  }

  /** How many entries the calling thread's list holds (its context's, or the confined one); for tests and gauges. */
  public int listed() {
    DeadlineList l = current();
    return l == null ? 0 : l.size();
  }

  /** Whether the calling thread's list has its timer armed; for tests. */
  public boolean armed() {
    DeadlineList l = current();
    return l != null && l.armed();
  }

  /** A delay in whole milliseconds, at least 1 and rounded up: a Vert.x timer is never early. */
  static long millisUp(long nanos) {
    return nanos <= 0 ? 1 : Math.max(1, nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1));
  }

  private DeadlineList current() {
    if (confined != null) {
      return confined;
    }
    Context context = Vertx.currentContext();
    return context == null ? null : context.get(key);
  }
}
