package io.kiln.pools.impl;

/**
 * The single timer that fires when the head of the queue has waited {@code maxBatchDelay}. Re-arming for
 * the same instant keeps the scheduled timer, so a burst of submits costs no timer churn. Not thread-safe.
 */
final class BatchTimer {

  private final Timers timers;
  private final Runnable onFire;
  private long id = -1;
  private long at;
  // Tells a stale firing (cancel raced with it) from the current one.
  private long generation;

  BatchTimer(Timers timers, Runnable onFire) {
    this.timers = timers;
    this.onFire = onFire;
  }

  void arm(long atNanos, long nowNanos) {
    if (id >= 0 && at == atNanos) {
      return;
    }
    disarm();
    long armed = ++generation;
    at = atNanos;
    id = timers.schedule(Math.max(0, atNanos - nowNanos), () -> {
      if (armed == generation) {
        id = -1;
      }
      onFire.run();
    });
  }

  void disarm() {
    if (id >= 0) {
      timers.cancel(id);
      id = -1;
      generation++;
    }
  }
}
