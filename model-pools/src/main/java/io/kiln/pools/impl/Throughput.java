package io.kiln.pools.impl;

/**
 * Recent completion rate as an exponentially decayed count: each completion adds 1, and the sum decays
 * with time constant {@code tau}, so in steady state it settles at rate × tau. Two fields and no
 * allocation per event. Early on it under-estimates the rate (the sum is still filling up), which errs
 * towards a longer {@code Retry-After}. Not thread-safe.
 */
final class Throughput {

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

  private void decay(long nowNanos) {
    long dt = nowNanos - lastNanos;
    if (dt > 0) {
      decayedCount *= Math.exp(-dt / tauNanos);
      lastNanos = nowNanos;
    }
  }
}
