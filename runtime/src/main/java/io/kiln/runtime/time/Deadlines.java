package io.kiln.runtime.time;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.internal.VertxInternal;
import io.vertx.core.shareddata.LocalMap;
import io.vertx.core.shareddata.Shareable;
import java.util.function.LongSupplier;

/**
 * The runtime's one timer facility for deadlines: many deadlines on few timers. Every deadline a request meets on
 * its way (the gateway's call, an actor's local call, a pool's queued or executing request) is an {@link Entry}
 * here rather than a Vert.x timer armed and cancelled per request, which cost a timer allocation, a task on the
 * event loop's scheduled queue and its cancellation, per request and per layer. A Vert.x instance has one such
 * facility, {@link #of}, which every layer shares: all the deadlines of one event-loop context are on one list with
 * one timer, whichever layer added them.
 *
 * <p>Per event-loop context, for the threads off any event loop together, or per confined owner ({@link
 * #confined}), the entries form one list ordered by deadline, watched by at most one armed timer, for the earliest:
 * an entry with one of the usual few timeouts is appended (deadlines of one timeout come in order), a shorter one is
 * inserted from the tail back, an entry settled in time unlinks itself in O(1), and the timer is re-armed only when
 * an earlier deadline becomes the earliest. When it fires, every entry due by then {@linkplain Entry#expired
 * expires}, in deadline order, and it waits for the earliest left. An entry leaving never cancels the timer, not
 * even the last (with one request in flight at a time that would cost a timer per request): on an empty list it
 * fires once more, finds nothing due and stops, so nothing idle holds a timer for longer than its last deadline. An
 * entry expires when its deadline is reached, within the timer's millisecond rounding (never early), as a timer of
 * its own would.
 *
 * <p>Threading: {@link #add} runs on the thread that owns the entry. On an event-loop context (its own thread) the
 * entry joins that context's list and {@link Entry#expired} runs there. Off an event loop (a worker context, a
 * thread of no context) it joins the facility's one off-loop list, which takes a lock rather than a hop to a loop:
 * its timer runs on one event-loop context the facility made for it, and {@code expired} runs on that context's
 * thread, outside the lock. With {@link #confined}, every call, and {@code expired}, run on the owner's thread,
 * which the {@link Timers} given run their tasks on. Nothing here blocks: the off-loop lock is held for a few
 * pointer writes, and a timer's scheduling when the earliest deadline changes.
 *
 * <p>Deadlines are absolute times on the facility's nano clock ({@code System::nanoTime} for {@link #of}; tests
 * inject their own through {@link #create} or {@link #confined}). Crossing a process boundary a deadline travels as
 * the time left, never as a clock reading.
 */
public final class Deadlines implements Shareable {

  /** One deadline; subclass it where the thing that can time out lives (a call, a request: no wrapper). */
  public abstract static class Entry {
    DeadlineList list; // while listed
    Entry prev;
    Entry next;
    int lane;
    long deadline;

    /**
     * The deadline passed: fail what waits. Runs on its list's thread (see {@link Deadlines}: the context's that
     * added it, or, added off an event loop, the facility's own loop; never under a lock), at most once
     * per {@link #add}; never after a successful {@link #remove()}. The entry is already off the list, so this
     * may add it again.
     */
    protected abstract void expired();

    /**
     * Stops watching this deadline (the thing settled in time). On the thread that added it this always works, and
     * so does it for an entry added off an event loop, on any thread that the add happened before. Called on
     * another thread for an entry on an event-loop context's list it does nothing and returns false: the entry
     * then stays listed until its deadline, when {@link #expired} runs and must find it settled. False too for an
     * entry off an event loop whose deadline has just been reached: {@code expired} is on its way.
     *
     * @return whether the entry was watched and now is not
     */
    public final boolean remove() {
      DeadlineList l = list;
      if (l == null) {
        return false;
      }
      if (l.locked) {
        return l.removeLocked(this);
      }
      if (l.owned()) {
        l.unlink(this);
        return true;
      }
      return false;
    }

    /** Whether the deadline is watched (added, neither expired nor removed). Read it on the owner's thread. */
    public final boolean watched() {
      return list != null;
    }

    /** The deadline it was last added with, on the facility's clock. */
    public final long deadline() {
      return deadline;
    }
  }

  private static final String SHARED = Deadlines.class.getName();

  private final LongSupplier clock;
  private final Timers contextTimers;
  /** The one list of a confined facility; null for a per-context one. */
  private final DeadlineList confined;
  /** Every thread off an event loop adds here, under the list's lock; null for a confined facility. */
  private final DeadlineList offLoop;
  private final Object key = new Object(); // this facility's list in each context's data
  /** Every list this facility made, for {@link #watched()}; one per event-loop context, added once each. */
  private final java.util.Queue<DeadlineList> lists = new java.util.concurrent.ConcurrentLinkedQueue<>();

  private Deadlines(Vertx vertx, LongSupplier clock, DeadlineList confined) {
    this.clock = clock;
    this.confined = confined;
    if (vertx == null) {
      this.contextTimers = null;
      this.offLoop = null;
      return;
    }
    this.contextTimers = timersOn(vertx, vertx::setTimer);
    // One event loop wakes the off-loop list: a timer set from a thread of no context would get a new one each time.
    ContextInternal wakes = ((VertxInternal) vertx).createEventLoopContext();
    Timers offLoopTimers = timersOn(vertx, wakes::setTimer);
    this.offLoop = new DeadlineList(offLoopTimers, clock, null, null, true);
  }

  /** Vert.x timers set through {@code setTimer} (the instance's, or one context's), cancelled on {@code vertx}. */
  private static Timers timersOn(Vertx vertx,
                                 java.util.function.BiFunction<Long, io.vertx.core.Handler<Long>, Long> setTimer) {
    return new Timers() {
      @Override
      public long schedule(long delayNanos, Runnable task) {
        return setTimer.apply(millisUp(delayNanos), id -> task.run());
      }

      @Override
      public void cancel(long id) {
        vertx.cancelTimer(id);
      }
    };
  }

  /**
   * The facility of {@code vertx}, on {@code System::nanoTime}: made by the first caller, shared by every later one
   * (the runtime's calls, the gateway's), so that one context's deadlines are on one list with one timer. Kept in
   * the instance's local shared data, so it lives and goes with it; call it once per component, not per request.
   */
  public static Deadlines of(Vertx vertx) {
    LocalMap<String, Deadlines> shared = vertx.sharedData().getLocalMap(SHARED);
    return shared.computeIfAbsent(SHARED, k -> new Deadlines(vertx, System::nanoTime, null));
  }

  /**
   * A facility of its own on {@code vertx}, for a test that drives the clock: one list and at most one timer per
   * event-loop context that adds to it, and one for the threads off any loop. Production code shares {@link #of}.
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
    return new Deadlines(null, nanoClock, new DeadlineList(timers, nanoClock, afterExpiries, null, false));
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
      offLoop.insertLocked(e);
      return;
    }
    DeadlineList l = context.get(key);
    if (l == null) {
      l = new DeadlineList(contextTimers, clock, null, Thread.currentThread(), false);
      context.put(key, l);
      lists.add(l);
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

  /**
   * How many entries the calling thread's list holds (its context's, the off-loop one, or the confined one); for
   * tests and gauges.
   */
  public int listed() {
    DeadlineList l = current();
    return l == null ? 0 : l.locked ? l.sizeLocked() : l.size();
  }

  /**
   * How many entries every list of this facility holds, on any thread: the deadlines in flight (a call or request
   * answered in time leaves at once, so under steady load this follows the in-flight count; one that keeps growing
   * means answered calls are not leaving). For a gauge: each event loop's count is read without synchronization, so
   * it may lag its loop by a moment.
   */
  public int watched() {
    if (confined != null) {
      return confined.size();
    }
    int n = offLoop.sizeLocked();
    for (DeadlineList l : lists) {
      n += l.size();
    }
    return n;
  }

  /** Whether the calling thread's list has its timer armed; for tests. */
  public boolean armed() {
    DeadlineList l = current();
    return l != null && (l.locked ? l.armedLocked() : l.armed());
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
    if (context == null || !context.isEventLoopContext() || !Context.isOnEventLoopThread()) {
      return offLoop;
    }
    return context.get(key);
  }
}
