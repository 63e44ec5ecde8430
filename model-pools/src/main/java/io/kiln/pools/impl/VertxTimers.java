package io.kiln.pools.impl;

import io.vertx.core.Context;

/**
 * {@link Timers} on a Vert.x context: {@code setTimer} in whole milliseconds, rounded up so a task is
 * never early. Must be called on that context (the dispatcher's thread), so the timers fire there.
 */
public final class VertxTimers implements Timers {

  private final Context context;

  public VertxTimers(Context context) {
    this.context = context;
  }

  @Override
  public long schedule(long delayNanos, Runnable task) {
    long ms = Math.max(1, (delayNanos + 999_999) / 1_000_000);
    return context.owner().setTimer(ms, id -> task.run());
  }

  @Override
  public void cancel(long id) {
    context.owner().cancelTimer(id);
  }
}
