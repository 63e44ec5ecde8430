package io.kiln.loadtest.impl;

/**
 * When each open-loop request is due, as an offset from the start of the run: the rate ramps linearly
 * from {@link #RAMP_FROM} of the target to the target over the warm-up, then stays constant. The ramp
 * lets both JVMs compile their hot paths before full load, so a cold start does not pile up a backlog
 * that would spill into the measurement. Immutable; a pure function of the index.
 */
public final class ArrivalSchedule {
  /** The warm-up starts at this fraction of the target rate. */
  public static final double RAMP_FROM = 0.1;

  private final double rate;
  private final long warmupNs;
  private final double warmupSeconds;
  private final long firstMeasured;
  private final double quadratic;

  /** @param rate target arrivals per second (> 0) */
  public ArrivalSchedule(double rate, long warmupNs) {
    if (!(rate > 0) || warmupNs < 0) {
      throw new IllegalArgumentException("rate must be > 0 and warm-up >= 0");
    }
    this.rate = rate;
    this.warmupNs = warmupNs;
    this.warmupSeconds = warmupNs / 1e9;
    // Arrivals by time t within the warm-up: rate * (a*t + (1-a) * t^2 / (2W)).
    double warmupCount = rate * warmupSeconds * (1 + RAMP_FROM) / 2;
    // Tolerate float noise (55000.000000001 is 55000), so a run of R/s for D s sends exactly R*D requests.
    this.firstMeasured = (long) Math.ceil(warmupCount - 1e-6);
    this.quadratic = warmupSeconds == 0 ? 0 : (1 - RAMP_FROM) / (2 * warmupSeconds);
  }

  /** Nanoseconds from the start of the run at which request {@code i} is due; non-decreasing in i. */
  public long offsetNs(long i) {
    if (i < firstMeasuredIndex()) {
      double c = i / rate;
      double t = (-RAMP_FROM + Math.sqrt(RAMP_FROM * RAMP_FROM + 4 * quadratic * c)) / (2 * quadratic);
      // Rounding must never move a warm-up request into the measured phase.
      return Math.min((long) (t * 1e9), warmupNs - 1);
    }
    // Measured requests are spaced exactly 1/rate from the end of warm-up.
    return warmupNs + (long) ((i - firstMeasured) / rate * 1e9);
  }

  /** The first request due at or after the end of warm-up. */
  public long firstMeasuredIndex() {
    return firstMeasured;
  }
}
