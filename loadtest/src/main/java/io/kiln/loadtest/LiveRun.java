package io.kiln.loadtest;

import io.kiln.loadtest.impl.ArrivalSchedule;
import io.kiln.loadtest.impl.ClosedLoopDriver;
import io.kiln.loadtest.impl.Driver;
import io.kiln.loadtest.impl.IntervalSeries;
import io.kiln.loadtest.impl.Measurements;
import io.kiln.loadtest.impl.OpenLoopDriver;
import io.kiln.loadtest.impl.Transport;
import io.vertx.core.Context;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * One run of a {@link LoadRunner}: {@link LoadRunner#run} drives it to its end on the caller's thread;
 * {@link LoadRunner#start} drives it on a thread of its own, so that the caller can watch it ({@link #snapshot()})
 * and end it when what it waits for has happened ({@link #stopIssuing()}, {@link #finish()}) — load that runs while
 * a cluster is changed, for as long as the change takes.
 */
public final class LiveRun {
  private static final long TICK_NS = TimeUnit.SECONDS.toNanos(1);
  private static final long POLL_NS = TimeUnit.MILLISECONDS.toNanos(10);
  private static final long DRAIN_GRACE_NS = TimeUnit.SECONDS.toNanos(2);

  /**
   * The measured requests so far: those that ended, by outcome, and those still in flight.
   *
   * @param completed requests that ended, all outcomes
   * @param inFlight  requests sent (or due, in open loop) and not ended yet
   */
  public record Snapshot(long completed, int inFlight, Map<String, Long> outcomes) {

    public Snapshot {
      outcomes = Map.copyOf(outcomes);
    }

    /** How many ended as {@code key}. */
    public long count(String key) {
      return outcomes.getOrDefault(key, 0L);
    }

    /** Requests issued: ended or in flight. */
    public long issued() {
      return completed + inFlight;
    }
  }

  private final LoadOptions options;
  private final Transport transport;
  private final LongSupplier clock;
  private final Instant startedAt = Instant.now();
  private final long t0;
  private final long measureStart;
  private final long deadline;
  private final Measurements m;
  private final Driver driver;
  private final AtomicBoolean driverStopped = new AtomicBoolean();
  private volatile long drainDeadline;
  private volatile boolean stopping;
  private volatile Thread thread;
  private volatile RunResult result;
  private volatile Throwable failure;

  LiveRun(LoadOptions options, Transport transport, Context[] contexts, LongSupplier clock) {
    this.options = options;
    this.transport = transport;
    this.clock = clock;
    t0 = clock.getAsLong();
    measureStart = t0 + options.warmup().toNanos();
    long measureEnd = measureStart + options.duration().toNanos();
    deadline = measureEnd + options.requestTimeout().toNanos() + DRAIN_GRACE_NS;
    m = new Measurements(measureStart);
    driver = options.mode() == LoadMode.OPEN
        ? new OpenLoopDriver(transport, contexts, m, options.mix(), clock, t0,
            new ArrivalSchedule(options.rate(), options.warmup().toNanos()), measureEnd,
            options.maxRequests(), options.maxInFlight())
        : new ClosedLoopDriver(transport, contexts, m, options.mix(), clock, measureEnd, options.maxRequests(),
            options.connections());
  }

  /** Runs on a thread of its own from now on. */
  LiveRun inBackground() {
    Thread t = new Thread(() -> {
      try {
        drive(ProgressListener.NONE);
      } catch (RuntimeException | Error e) {
        failure = e;
      }
    }, "loadgen-run-" + options.name());
    t.setDaemon(true);
    thread = t;
    t.start();
    return this;
  }

  /** The measured requests so far; any thread, any time. */
  public Snapshot snapshot() {
    Measurements.Phase p = m.measured();
    return new Snapshot(p.completed(), m.inFlight(), p.outcomes());
  }

  /**
   * Sends nothing more (in open loop, a request due and not sent yet is withdrawn, not counted); requests in flight go
   * on and are counted as they end (those not ended within the request timeout, plus 2 s, as {@code unfinished}).
   * Returns once the generator has stopped issuing.
   */
  public void stopIssuing() {
    drainDeadline = clock.getAsLong() + options.requestTimeout().toNanos() + DRAIN_GRACE_NS;
    stopping = true;
    if (driverStopped.compareAndSet(false, true)) {
      driver.halt();
    }
  }

  /**
   * Stops issuing, waits for the requests in flight (at most the request timeout plus 2 s) and returns the result.
   * For a run started with {@link LoadRunner#start}; blocks, so never call it on an event loop.
   */
  public RunResult finish() {
    Thread t = thread;
    if (t == null) {
      throw new IllegalStateException("finish() is for runs started with LoadRunner.start");
    }
    stopIssuing();
    try {
      t.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("load test interrupted", e);
    }
    if (failure != null) {
      throw new IllegalStateException("the load test failed", failure);
    }
    return result;
  }

  /** Issues requests and ticks {@code progress} until the run is over; returns its result. */
  RunResult drive(ProgressListener progress) {
    IntervalSeries warm = new IntervalSeries(m.warmup(), "warmup", t0);
    IntervalSeries measured = new IntervalSeries(m.measured(), "measure", measureStart);
    long endNs;
    try {
      driver.start();
      boolean warmupTicks = !options.warmup().isZero();
      // Warm-up intervals run from t0 and end exactly at measureStart; measured ones start there.
      long nextTick = warmupTicks ? Math.min(t0 + TICK_NS, measureStart) : measureStart + TICK_NS;
      while (true) {
        long now = clock.getAsLong();
        if ((driver.issuingDone() && m.inFlight() == 0) || now - deadline >= 0
            || (stopping && now - drainDeadline >= 0)) {
          endNs = now;
          break;
        }
        if (now - nextTick >= 0) {
          boolean warmTick = warmupTicks && nextTick - measureStart <= 0;
          progress.onProgress((warmTick ? warm : measured).tick(now, m.inFlight(), false));
          nextTick = nextTick - measureStart < 0 ? Math.min(nextTick + TICK_NS, measureStart) : nextTick + TICK_NS;
          continue;
        }
        LockSupport.parkNanos(Math.min(POLL_NS, nextTick - now));
        if (Thread.interrupted()) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("load test interrupted");
        }
      }
    } finally {
      stopDriver(clock.getAsLong());
      m.settleOutstanding(clock.getAsLong());
      LoadRunner.closeQuietly(transport);
    }
    progress.onProgress(measured.tick(Math.max(endNs, measureStart), 0, true));
    result = result(measured);
    return result;
  }

  /** Once: the first stop decides which due requests were never sent. */
  private void stopDriver(long endNs) {
    if (driverStopped.compareAndSet(false, true)) {
      driver.stop(endNs);
    }
  }

  private RunResult result(IntervalSeries measured) {
    LoadOptions o = options;
    Measurements.Phase p = m.measured();
    long requests = p.completed();
    long errors = p.errors();
    long lastEnd = p.lastEndNs();
    double seconds = requests == 0 || lastEnd == Long.MIN_VALUE ? o.duration().toNanos() / 1e9
        : Math.max(1e-6, (lastEnd - m.measureStartNs()) / 1e9);
    return new RunResult(o.name(), o.describe(), startedAt.toString(),
        o.mode() == LoadMode.OPEN ? "intended" : "sent", round(seconds), requests, requests - errors, errors,
        round(requests / seconds), round((requests - errors) / seconds), o.mode() == LoadMode.OPEN ? o.rate() : null,
        measured.latency(), p.outcomes(), measured.samples(), measured.distribution(), p.latencyByOutcome(),
        p.examples(), o.source() instanceof LlmWorkload w
            ? p.llm().summary(w.api().cliName(), seconds, round((requests - errors) / seconds)) : null);
  }

  private static double round(double v) {
    return Math.round(v * 1000) / 1000.0;
  }
}
