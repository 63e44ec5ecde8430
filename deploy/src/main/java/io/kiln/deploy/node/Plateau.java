package io.kiln.deploy.node;

import java.util.ArrayList;
import java.util.List;

/**
 * Tells when a warm-up's own throughput has stopped climbing, from samples of its answered-request count.
 * A cold JVM serves a fraction of its warm rate while the JIT compiles the request path; the rate climbs as
 * compiled code replaces interpreted code (on one loaded core, for about ten seconds), then flattens. The
 * plateau is reached once the rate over the last {@link #WINDOW} is less than {@link #GROWTH} times the rate
 * over the window that ended {@link #LAG} before, at {@link #CONFIRMATIONS} samples in a row, and never
 * before {@link #WINDOW} + {@link #LAG} + {@link #WINDOW} of traffic (two whole windows to compare).
 *
 * <p>A pure function of the samples and their times (the caller's clock); not thread-safe.
 */
final class Plateau {

  static final long WINDOW = 1_000_000_000L;
  static final long LAG = 1_000_000_000L;
  /** A rate still growing by this factor or more within {@link #LAG} + {@link #WINDOW} is still climbing. */
  static final double GROWTH = 1.10;
  /** Samples in a row that must find the rate flat, so one dip (a noisy neighbour) does not end the warm-up. */
  static final int CONFIRMATIONS = 3;

  private record Sample(long nanos, long count) {
  }

  private final List<Sample> samples = new ArrayList<>();
  private int flat;
  private boolean reached;

  /** Adds a sample: {@code count} requests answered so far at {@code nanos}. */
  void sample(long nanos, long count) {
    samples.add(new Sample(nanos, count));
    while (samples.size() > 2 && nanos - samples.get(1).nanos() >= 2 * WINDOW + LAG) {
      samples.remove(0); // the oldest one still needed is the last at or before the earlier window's start
    }
    if (reached || nanos - samples.get(0).nanos() < 2 * WINDOW + LAG) {
      return;
    }
    double now = rate(nanos - WINDOW, nanos);
    double before = rate(nanos - WINDOW - LAG - WINDOW, nanos - WINDOW - LAG);
    flat = now < GROWTH * before ? flat + 1 : 0;
    reached = flat >= CONFIRMATIONS;
  }

  boolean reached() {
    return reached;
  }

  /** Requests per second between two times, from the samples nearest them at or before each. */
  private double rate(long from, long to) {
    Sample a = at(from);
    Sample b = at(to);
    return b.nanos() == a.nanos() ? 0 : (b.count() - a.count()) * 1e9 / (b.nanos() - a.nanos());
  }

  private Sample at(long nanos) {
    Sample best = samples.get(0);
    for (Sample s : samples) {
      if (s.nanos() - nanos > 0) {
        break;
      }
      best = s;
    }
    return best;
  }
}
