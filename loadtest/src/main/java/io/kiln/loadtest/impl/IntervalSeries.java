package io.kiln.loadtest.impl;

import io.kiln.loadtest.Progress;
import io.kiln.loadtest.RunResult;
import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * Turns a phase's recorder into per-interval samples and a running total. Used by one thread only.
 */
public final class IntervalSeries {
  private final Measurements.Phase phase;
  private final String phaseName;
  private final long originNs;
  private final Histogram total = new Histogram(1, Measurements.HIGHEST_TRACKABLE_US, 3);
  private final List<RunResult.Sample> samples = new ArrayList<>();
  private Histogram interval;
  private Histogram previous;
  private long lastTickNs;
  private long lastRequests;
  private long lastErrors;

  /** @param originNs where this phase's clock starts (samples are timed from it) */
  public IntervalSeries(Measurements.Phase phase, String phaseName, long originNs) {
    this.phase = phase;
    this.phaseName = phaseName;
    this.originNs = originNs;
    this.lastTickNs = originNs;
  }

  /**
   * Closes the interval ending at {@code nowNs} and returns the progress so far. A final interval shorter
   * than half a tick is merged into the previous one, so the series ends without a spurious spike.
   */
  public Progress tick(long nowNs, int inFlight, boolean last) {
    // Counters first: the recorder is then at least as new as them (count() records latency first).
    long requests = phase.completed();
    long errors = phase.errors();
    interval = phase.recorder.getIntervalHistogram(interval);
    total.add(interval);
    long fromNs = lastTickNs;
    long fromRequests = lastRequests;
    long fromErrors = lastErrors;
    Histogram h = interval;
    if (last && !samples.isEmpty() && nowNs - lastTickNs < 500_000_000L && previous != null) {
      RunResult.Sample prev = samples.remove(samples.size() - 1);
      fromNs = lastTickNs - Math.round(prev.seconds() * 1e9);
      fromRequests = lastRequests - prev.requests();
      fromErrors = lastErrors - prev.errors();
      previous.add(interval);
      h = previous;
    }
    double seconds = Math.max(1e-9, (nowNs - fromNs) / 1e9);
    long dRequests = requests - fromRequests;
    boolean any = h.getTotalCount() > 0;
    samples.add(new RunResult.Sample(round((nowNs - originNs) / 1e9), round(seconds), dRequests,
        round(dRequests / seconds), errors - fromErrors, any ? ms(h.getValueAtPercentile(50), h) : null,
        any ? ms(h.getValueAtPercentile(99), h) : null, any ? ms(h.getMaxValue(), h) : null));
    if (previous == null) {
      previous = interval.copy();
    } else if (h != previous) {
      previous.reset();
      previous.add(interval);
    }
    // The closing progress line reports the whole phase's rate; a sliver of an interval would mislead.
    double rps = last ? requests / Math.max(1e-9, (nowNs - originNs) / 1e9)
        : (requests - lastRequests) / Math.max(1e-9, (nowNs - lastTickNs) / 1e9);
    lastTickNs = nowNs;
    lastRequests = requests;
    lastErrors = errors;
    return new Progress(phaseName, (nowNs - originNs) / 1e9, rps,
        ms(total.getValueAtPercentile(50), total), ms(total.getValueAtPercentile(99), total), requests, errors, inFlight);
  }

  public List<RunResult.Sample> samples() {
    return List.copyOf(samples);
  }

  /** Summary, in milliseconds, of all latencies recorded up to the last tick. */
  public RunResult.Latency latency() {
    return summary(total);
  }

  /** Summary, in milliseconds, of the latencies (microseconds) in {@code h}. */
  static RunResult.Latency summary(Histogram h) {
    if (h.getTotalCount() == 0) {
      return new RunResult.Latency(0, 0, 0, 0, 0, 0, 0, 0);
    }
    return new RunResult.Latency(h.getTotalCount(), ms(h.getMinValue(), h), round(h.getMean() / 1000),
        ms(h.getValueAtPercentile(50), h), ms(h.getValueAtPercentile(90), h),
        ms(h.getValueAtPercentile(99), h), ms(h.getValueAtPercentile(99.9), h),
        ms(h.getMaxValue(), h));
  }

  /** Latency by percentile, about five points per halving of the remaining fraction, ending at 100. */
  public List<RunResult.PercentilePoint> distribution() {
    List<RunResult.PercentilePoint> points = new ArrayList<>();
    if (total.getTotalCount() == 0) {
      return points;
    }
    for (HistogramIterationValue v : total.percentiles(5)) {
      double pct = Math.min(100.0, v.getPercentileLevelIteratedTo());
      points.add(new RunResult.PercentilePoint(round(pct), ms(v.getValueIteratedTo(), total)));
      if (pct >= 100.0) {
        break;
      }
    }
    return points;
  }

  private static double ms(long micros, Histogram h) {
    // Report the bucket's highest equivalent value: a percentile is never understated.
    return micros == 0 ? 0 : round(h.highestEquivalentValue(micros) / 1000.0);
  }

  static double round(double v) {
    return Math.round(v * 1e6) / 1e6;
  }
}
