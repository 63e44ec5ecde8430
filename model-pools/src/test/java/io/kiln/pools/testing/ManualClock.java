package io.kiln.pools.testing;

import io.kiln.pools.impl.Timers;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.function.LongSupplier;

/**
 * A nanosecond clock that moves only when the test says, with timers that fire, in due order and each at
 * its due time, as the test advances it. Single-threaded, like the dispatcher it drives.
 */
public final class ManualClock implements LongSupplier, Timers {

  private record Task(long dueOffset, long id, Runnable task) { }

  private final long origin;
  private long offset;
  private long nextId;
  private final PriorityQueue<Task> tasks =
      new PriorityQueue<>((a, b) -> a.dueOffset != b.dueOffset ? Long.compare(a.dueOffset, b.dueOffset) : Long.compare(a.id, b.id));
  private final Map<Long, Task> byId = new HashMap<>();

  public ManualClock() {
    this(1_000_000_000L);
  }

  /** Starts at {@code originNanos}; pick one near {@code Long.MAX_VALUE} to test overflow-safe arithmetic. */
  public ManualClock(long originNanos) {
    this.origin = originNanos;
  }

  @Override
  public long getAsLong() {
    return origin + offset;
  }

  @Override
  public long schedule(long delayNanos, Runnable task) {
    if (delayNanos < 0) {
      throw new IllegalArgumentException("negative delay " + delayNanos);
    }
    Task t = new Task(offset + delayNanos, nextId++, task);
    tasks.add(t);
    byId.put(t.id, t);
    return t.id;
  }

  @Override
  public void cancel(long id) {
    Task t = byId.remove(id);
    if (t != null) {
      tasks.remove(t);
    }
  }

  public void advance(Duration d) {
    advanceNanos(d.toNanos());
  }

  public void advanceMillis(long millis) {
    advanceNanos(millis * 1_000_000);
  }

  /** Moves time forward, firing every timer that falls due on the way at its due time. */
  public void advanceNanos(long nanos) {
    if (nanos < 0) {
      throw new IllegalArgumentException("time runs forward");
    }
    long target = offset + nanos;
    for (Task t = tasks.peek(); t != null && t.dueOffset <= target; t = tasks.peek()) {
      tasks.poll();
      byId.remove(t.id);
      offset = Math.max(offset, t.dueOffset);
      t.task.run();
    }
    offset = target;
  }

  /** Moves time forward without firing timers, as a loaded event loop would: they fire late, on {@link #fireDue}. */
  public void advanceLate(Duration d) {
    offset += d.toNanos();
  }

  /** Fires timers already due (after {@link #advanceLate}). */
  public void fireDue() {
    advanceNanos(0);
  }

  public int pendingTimers() {
    return tasks.size();
  }

  /** Nanoseconds since the clock was created. */
  public long elapsedNanos() {
    return offset;
  }
}
