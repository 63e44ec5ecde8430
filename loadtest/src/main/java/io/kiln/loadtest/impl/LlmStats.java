package io.kiln.loadtest.impl;

import io.kiln.loadtest.RunResult;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.AtomicHistogram;

/**
 * The streamed generations of one phase of a run: time to first token and end-to-end latency per request (from the
 * request's start, as the run's latency: intended send time in open loop, actual send in closed loop), every gap
 * between successive text chunks, output tokens. Recording is safe from any thread; µs, 3 significant digits.
 */
public final class LlmStats {
  private final AtomicHistogram ttft = histogram();
  private final AtomicHistogram itl = histogram();
  private final AtomicHistogram e2e = histogram();
  private final LongAdder requests = new LongAdder();
  private final LongAdder outputTokens = new LongAdder();

  private static AtomicHistogram histogram() {
    return new AtomicHistogram(1, Measurements.HIGHEST_TRACKABLE_US, 3);
  }

  /** One successful generation that started at {@code startNs} and ended at {@code endNs}. */
  public void record(LlmTimings t, long startNs, long endNs) {
    if (t.chunks() > 0) {
      ttft.recordValue(micros(t.firstTokenNs() - startNs));
    }
    for (long gap : t.gapsNs()) {
      itl.recordValue(micros(gap));
    }
    e2e.recordValue(micros(endNs - startNs));
    outputTokens.add(t.outputTokens());
    requests.increment();
  }

  private static long micros(long ns) {
    return Math.max(1, Math.min(Measurements.HIGHEST_TRACKABLE_US, ns / 1_000));
  }

  public long requests() {
    return requests.sum();
  }

  public long outputTokens() {
    return outputTokens.sum();
  }

  /** The summary over {@code seconds} of measurement; {@code okRps} is the run's successful requests per second. */
  public RunResult.Llm summary(String api, double seconds, double okRps) {
    long n = requests.sum();
    long tokens = outputTokens.sum();
    double s = Math.max(1e-6, seconds);
    return new RunResult.Llm(api, n, tokens, round(n == 0 ? 0 : (double) tokens / n), round(tokens / s), okRps,
        IntervalSeries.summary(ttft.copy()), IntervalSeries.summary(itl.copy()), IntervalSeries.summary(e2e.copy()));
  }

  private static double round(double v) {
    return Math.round(v * 1000) / 1000.0;
  }
}
