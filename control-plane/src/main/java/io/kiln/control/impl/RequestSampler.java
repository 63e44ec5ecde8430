package io.kiln.control.impl;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import java.time.Clock;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * This node's per-model request series: once a second (driven by its owner) it reads the gateway's existing
 * {@code kiln.gateway.request.duration} timers from the node's registry — counts by outcome and their cumulative
 * histogram buckets — and keeps the difference to the previous read as one {@link Sample} in a ring of the last
 * {@code capacity} seconds. The request path is untouched: nothing is recorded per request beyond what the gateway
 * already records; the cost is one registry walk per second, proportional to the number of timer series. Each sample
 * also carries the text generation models' figures ({@link LlmSampler}).
 *
 * <p>Histogram bucket deltas (not percentiles) are kept, so that samples of several nodes add up exactly and the
 * cluster's p50/p99 are read from their sum ({@link ClusterSeries}).
 *
 * <p>Thread-safe: {@link #sample()} and {@link #since(long)} synchronise on the sampler.
 */
public final class RequestSampler {

  /** The gateway's request timer, tagged {@code model}, {@code outcome}, {@code protocol}. */
  static final String TIMER = "kiln.gateway.request.duration";
  /** The outcome label of a successful request; every other outcome counts as an error. */
  static final String OK = "ok";
  /** The gateway's label for names it does not know: no deployment to show it under. */
  static final String UNKNOWN_MODEL = "_unknown";

  /**
   * One model's requests in one second on one node.
   *
   * @param lowers the buckets' lower bounds in seconds (the previous bucket's upper bound; 0 for the first)
   * @param bounds the buckets' upper bounds in seconds, ascending
   * @param counts requests per bucket (not cumulative), one per bound
   * @param overflow requests slower than the last bound
   */
  record ModelDelta(long requests, long errors, double[] lowers, double[] bounds, long[] counts, long overflow) {
  }

  /**
   * The requests between two reads, by model (models without requests left out), labelled with the epoch
   * {@code second} of the later read. {@code seq} numbers a sampler's samples from 0: readers ask for the samples
   * after the last one they have, so a sample is never half-read (two reads within one second are two samples of
   * that second, added up by whoever plots them).
   */
  record Sample(long seq, long second, Map<String, ModelDelta> models, Map<String, LlmSampler.LlmDelta> llm) {

    Sample(long seq, long second, Map<String, ModelDelta> models) {
      this(seq, second, models, Map.of());
    }
  }

  /** A model's cumulative totals at one read. */
  record Totals(long count, long errors, double[] bounds, long[] cumulative) {
  }

  private final MeterRegistry registry;
  private final Clock clock;
  private final int capacity;
  private final ArrayDeque<Sample> ring = new ArrayDeque<>();
  private final LlmSampler llm;
  private final String incarnation = java.util.UUID.randomUUID().toString();
  private Map<String, Totals> previous; // null before the first read: that read is the baseline
  private long nextSeq;

  /**
   * @param capacity samples kept (one a second when driven once a second)
   */
  public RequestSampler(MeterRegistry registry, Clock clock, int capacity) {
    this.registry = registry;
    this.clock = clock;
    this.capacity = capacity;
    this.llm = new LlmSampler(registry);
  }

  /** Reads the timers and appends the second's sample (the first call only takes the baseline). */
  public synchronized void sample() {
    long second = clock.millis() / 1000;
    Map<String, Totals> now = read();
    Map<String, LlmSampler.LlmDelta> generative = llm.sample();
    Map<String, Totals> before = previous;
    previous = now;
    if (before == null) {
      return;
    }
    Map<String, ModelDelta> models = new HashMap<>();
    for (Map.Entry<String, Totals> e : now.entrySet()) {
      ModelDelta d = delta(e.getValue(), before.get(e.getKey()));
      if (d != null) {
        models.put(e.getKey(), d);
      }
    }
    ring.addLast(new Sample(nextSeq++, second, Map.copyOf(models), generative));
    while (ring.size() > capacity) {
      ring.pollFirst();
    }
  }

  /**
   * A name of this sampler's life: a reader that knew another (the node restarted, its numbers started again) must
   * read from the start.
   */
  String incarnation() {
    return incarnation;
  }

  /** The samples after number {@code seq} (-1: all), oldest first. */
  synchronized List<Sample> since(long seq) {
    List<Sample> out = new ArrayList<>();
    for (Sample s : ring) {
      if (s.seq() > seq) {
        out.add(s);
      }
    }
    return out;
  }

  private Map<String, Totals> read() {
    Map<String, Totals> out = new HashMap<>();
    for (Timer t : registry.find(TIMER).timers()) {
      String model = t.getId().getTag("model");
      if (model == null || model.equals(UNKNOWN_MODEL)) {
        continue;
      }
      out.merge(model, totals(t, OK.equals(t.getId().getTag("outcome"))), RequestSampler::sum);
    }
    return out;
  }

  /** {@code t}'s count and cumulative buckets now; its count are errors unless {@code ok}. */
  static Totals totals(Timer t, boolean ok) {
    HistogramSnapshot s = t.takeSnapshot();
    CountAtBucket[] buckets = s.histogramCounts();
    double[] bounds = new double[buckets.length];
    long[] cumulative = new long[buckets.length];
    for (int i = 0; i < buckets.length; i++) {
      bounds[i] = buckets[i].bucket(TimeUnit.SECONDS);
      cumulative[i] = (long) buckets[i].count();
    }
    return new Totals(s.count(), ok ? 0 : s.count(), bounds, cumulative);
  }

  static Totals sum(Totals a, Totals b) {
    if (a.bounds().length != b.bounds().length) {
      // Timers of one model with other bucket layouts cannot be added bucket by bucket: keep the counts only.
      return new Totals(a.count() + b.count(), a.errors() + b.errors(), a.bounds(), a.cumulative());
    }
    long[] c = new long[a.cumulative().length];
    for (int i = 0; i < c.length; i++) {
      c[i] = a.cumulative()[i] + b.cumulative()[i];
    }
    return new Totals(a.count() + b.count(), a.errors() + b.errors(), a.bounds(), c);
  }

  /** The requests between two reads; null if none. A total that went down (meters removed) starts again from 0. */
  static ModelDelta delta(Totals now, Totals before) {
    boolean reset = before == null || now.count() < before.count()
        || before.bounds().length != now.bounds().length;
    long n = reset ? now.count() : now.count() - before.count();
    if (n <= 0) {
      return null;
    }
    long errors = Math.max(0, reset ? now.errors() : now.errors() - before.errors());
    int k = now.bounds().length;
    long[] counts = new long[k];
    long below = 0; // cumulative delta up to the previous bound
    for (int i = 0; i < k; i++) {
      long cum = Math.max(0, now.cumulative()[i] - (reset ? 0 : before.cumulative()[i]));
      counts[i] = Math.max(0, cum - below);
      below = Math.max(below, cum);
    }
    double[] lowers = new double[k];
    for (int i = 1; i < k; i++) {
      lowers[i] = now.bounds()[i - 1];
    }
    return new ModelDelta(n, Math.min(errors, n), lowers, now.bounds(), counts, Math.max(0, n - below));
  }

}
