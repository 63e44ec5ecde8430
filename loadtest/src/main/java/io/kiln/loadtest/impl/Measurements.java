package io.kiln.loadtest.impl;

import io.kiln.loadtest.RunResult;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.AtomicHistogram;
import org.HdrHistogram.Recorder;

/**
 * Where every request of a run is accounted for, exactly once. A request belongs to the measured phase
 * when its start (intended send time in open loop, actual send time in closed loop) is at or after the
 * end of warm-up. Recording is wait-free and safe from any thread; interval histograms are taken by one
 * thread (the run's control thread).
 *
 * <p>Latency is kept in microseconds, 3 significant digits, up to one hour.
 */
public final class Measurements {
  public static final long HIGHEST_TRACKABLE_US = TimeUnit.HOURS.toMicros(1);

  /** A request that has been handed to a transport and not yet settled. Identity-compared. */
  public static final class Pending {
    final long startNs;

    Pending(long startNs) {
      this.startNs = startNs;
    }
  }

  /** Counters of one phase. */
  public static final class Phase {
    final Recorder recorder = new Recorder(1, HIGHEST_TRACKABLE_US, 3);
    private final ConcurrentHashMap<String, LongAdder> outcomes = new ConcurrentHashMap<>();
    final LongAdder completed = new LongAdder();
    final LongAdder errors = new LongAdder();
    final LongAccumulator lastEndNs = new LongAccumulator(Math::max, Long.MIN_VALUE);
    private final LlmStats llm = new LlmStats();

    private final ConcurrentHashMap<String, AtomicHistogram> byOutcome = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, ConcurrentHashMap<String, LongAdder>> examples = new ConcurrentHashMap<>();

    void count(Outcome o, long startNs, long endNs) {
      outcomes.computeIfAbsent(o.key(), k -> new LongAdder()).increment();
      if (!o.ok()) {
        errors.increment();
      }
      if (o.hasLatency()) {
        long micros = Math.max(1, Math.min(HIGHEST_TRACKABLE_US, (endNs - startNs) / 1_000));
        recorder.recordValue(micros);
        byOutcome.computeIfAbsent(o.key(), k -> new AtomicHistogram(1, HIGHEST_TRACKABLE_US, 3)).recordValue(micros);
      }
      if (o.example() != null) {
        ConcurrentHashMap<String, LongAdder> kinds = examples.computeIfAbsent(o.key(), k -> new ConcurrentHashMap<>());
        LongAdder n = kinds.get(o.example());
        if (n == null) {
          synchronized (kinds) { // a new kind is rare; the bound holds exactly
            String kind = kinds.size() < RunResult.MAX_EXAMPLES ? o.example() : "(other)";
            n = kinds.computeIfAbsent(kind, k -> new LongAdder());
          }
        }
        n.increment();
      }
      if (o.llm() != null && o.ok()) {
        llm.record(o.llm(), startNs, endNs);
      }
      lastEndNs.accumulate(endNs);
      // Counted last, so a sampler that sees the count also sees the latency.
      completed.increment();
    }

    public long completed() {
      return completed.sum();
    }

    public long errors() {
      return errors.sum();
    }

    /** Outcome key → count, sorted by key. */
    public Map<String, Long> outcomes() {
      Map<String, Long> m = new TreeMap<>();
      outcomes.forEach((k, v) -> m.put(k, v.sum()));
      return m;
    }

    /** The phase's successful streamed generations (empty unless the run is an LLM run). */
    public LlmStats llm() {
      return llm;
    }

    public long lastEndNs() {
      return lastEndNs.get();
    }

    /** Outcome key → the latency summary of its requests so far (those with a latency). */
    public Map<String, RunResult.Latency> latencyByOutcome() {
      Map<String, RunResult.Latency> m = new TreeMap<>();
      byOutcome.forEach((k, h) -> m.put(k, IntervalSeries.summary(h.copy())));
      return m;
    }

    /** Outcome key → example → count, for the outcomes that carried examples. */
    public Map<String, Map<String, Long>> examples() {
      Map<String, Map<String, Long>> m = new TreeMap<>();
      examples.forEach((k, kinds) -> {
        Map<String, Long> counts = new TreeMap<>();
        kinds.forEach((why, n) -> counts.put(why, n.sum()));
        m.put(k, counts);
      });
      return m;
    }
  }

  private final long measureStartNs;
  private final Phase warmup = new Phase();
  private final Phase measured = new Phase();
  private final Set<Pending> pending = ConcurrentHashMap.newKeySet();
  private final AtomicInteger inFlight = new AtomicInteger();

  public Measurements(long measureStartNs) {
    this.measureStartNs = measureStartNs;
  }

  public long measureStartNs() {
    return measureStartNs;
  }

  public Phase warmup() {
    return warmup;
  }

  public Phase measured() {
    return measured;
  }

  public boolean isMeasured(long startNs) {
    return startNs - measureStartNs >= 0;
  }

  /** Registers a request about to be sent; {@code startNs} is where its latency starts. */
  public Pending begin(long startNs) {
    Pending p = new Pending(startNs);
    inFlight.incrementAndGet();
    pending.add(p);
    return p;
  }

  /** Settles a request; ignored if the run already settled it as unfinished. */
  public void complete(Pending p, long endNs, Outcome outcome) {
    if (pending.remove(p)) {
      inFlight.decrementAndGet();
      phaseOf(p.startNs).count(outcome, p.startNs, endNs);
    }
  }

  /**
   * Settles every request still in flight as {@code unfinished}, recording the time it has waited so far
   * as a lower bound of its latency. Later completions of these requests are ignored.
   */
  public void settleOutstanding(long endNs) {
    for (Pending p : pending) {
      if (pending.remove(p)) {
        inFlight.decrementAndGet();
        phaseOf(p.startNs).count(Outcome.UNFINISHED, p.startNs, endNs);
      }
    }
  }

  /** Records a request that was due at {@code intendedNs} but never sent before the run ended. */
  public void recordNeverSent(long intendedNs, long endNs) {
    phaseOf(intendedNs).count(Outcome.UNFINISHED, intendedNs, endNs);
  }

  public int inFlight() {
    return inFlight.get();
  }

  private Phase phaseOf(long startNs) {
    return isMeasured(startNs) ? measured : warmup;
  }
}
