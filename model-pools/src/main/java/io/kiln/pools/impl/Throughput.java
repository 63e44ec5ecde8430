package io.kiln.pools.impl;

import java.time.Duration;

/**
 * Recent completion rate as an exponentially decayed count: each completion adds 1, and the sum decays
 * with time constant {@code tau}, so in steady state it settles at rate × tau. Two fields and no
 * allocation per event. Early on it under-estimates the rate (the sum is still filling up), which errs
 * towards a longer {@code Retry-After}. Not thread-safe.
 */
final class Throughput {

  static final long MIN_RETRY_AFTER_S = 1;
  static final long MAX_RETRY_AFTER_S = 30;

  private final double tauNanos;
  private double decayedCount;
  private long lastNanos;

  Throughput(long tauNanos, long nowNanos) {
    this.tauNanos = tauNanos;
    this.lastNanos = nowNanos;
  }

  void record(int completions, long nowNanos) {
    decay(nowNanos);
    decayedCount += completions;
  }

  /** Completions per second, recently. */
  double perSecond(long nowNanos) {
    decay(nowNanos);
    return decayedCount / (tauNanos / 1e9);
  }

  /**
   * How long until {@code queued} requests are likely served at the recent rate: whole seconds, rounded
   * up, between {@value #MIN_RETRY_AFTER_S} and {@value #MAX_RETRY_AFTER_S} s, the maximum when nothing
   * completed lately.
   */
  Duration retryAfter(int queued, long nowNanos) {
    double rate = perSecond(nowNanos);
    double seconds = rate > 0 ? Math.ceil(queued / rate) : MAX_RETRY_AFTER_S;
    return Duration.ofSeconds((long) Math.max(MIN_RETRY_AFTER_S, Math.min(MAX_RETRY_AFTER_S, seconds)));
  }

  private void decay(long nowNanos) {
    long dt = nowNanos - lastNanos;
    if (dt > 0) {
      decayedCount *= Math.exp(-dt / tauNanos);
      lastNanos = nowNanos;
    }
  }
}
