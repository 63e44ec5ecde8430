package io.kiln.pools;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;

/**
 * The fixed histogram buckets of Kiln's meters, one set per kind of quantity, the same on every node so that
 * Prometheus can add buckets across nodes and pools and {@code histogram_quantile} over the sums. Fixed bounds
 * (service-level objectives, in Micrometer's words) rather than Micrometer's percentile histogram: that one puts
 * ~70 buckets between 1 ms and 60 s on each series; these are 12–18, which keeps {@code /metrics} small. No
 * client-side percentiles: they cannot be combined. Recording stays O(log buckets) and allocation-free (a binary
 * search and an atomic increment).
 *
 * <ul>
 *   <li>{@link #latency}: request-path durations, 100 µs to 60 s ({@link #LATENCY}, 18 bounds);
 *   <li>{@link #rows}: batch sizes in rows, powers of two 1 to 1024 ({@link #ROWS}, 11 bounds);
 *   <li>{@link #load}: model load and warm-up durations, 100 ms to 10 min ({@link #LOAD}, 12 bounds).
 * </ul>
 */
public final class MeterBuckets {

  /** Upper bounds for request-path durations (queue, compute, gateway request, stream chunks). */
  public static final Duration[] LATENCY = durations(
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60);
  /** Upper bounds for batch sizes, in rows. */
  public static final double[] ROWS = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  /** Upper bounds for model load and warm-up durations. */
  public static final Duration[] LOAD = durations(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600);

  private MeterBuckets() {
  }

  /** {@code builder} with the {@link #LATENCY} buckets. */
  public static Timer.Builder latency(Timer.Builder builder) {
    return builder.serviceLevelObjectives(LATENCY.clone());
  }

  /** {@code builder} with the {@link #LOAD} buckets. */
  public static Timer.Builder load(Timer.Builder builder) {
    return builder.serviceLevelObjectives(LOAD.clone());
  }

  /** {@code builder} with the {@link #ROWS} buckets. */
  public static DistributionSummary.Builder rows(DistributionSummary.Builder builder) {
    return builder.serviceLevelObjectives(ROWS.clone());
  }

  private static Duration[] durations(double... seconds) {
    Duration[] d = new Duration[seconds.length];
    for (int i = 0; i < seconds.length; i++) {
      d[i] = Duration.ofNanos(Math.round(seconds[i] * 1e9));
    }
    return d;
  }
}
