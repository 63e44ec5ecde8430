package io.kiln.loadtest.impl;

import io.kiln.loadtest.RequestMix;
import io.vertx.core.Context;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Constant arrival rate without coordinated omission. Request {@code i} is due at
 * {@code t0 + schedule.offsetNs(i)} (a ramp during warm-up, then {@code 1/rate} apart); a pacer thread
 * hands due requests to an event loop, and each one's latency is measured from that <em>intended</em>
 * time. If the generator falls behind, the server stalls, or the connection pool is exhausted, requests
 * go out late (or wait in the pool) and the delay is counted as latency, as a user arriving at that
 * moment would experience it. At most {@code maxInFlight} requests are outstanding; further due requests
 * wait in the pacer, still timed from their intended time.
 *
 * <p>One exception, for warm-up only: warm-up requests not yet sent when measurement begins are dropped
 * (never sent, never counted), so a cold generator's start-up backlog is not carried into the
 * measurement. Measured requests are never dropped: unsent ones are counted as {@code unfinished}.
 */
public final class OpenLoopDriver implements Driver {
  private static final long MAX_PARK_NS = TimeUnit.MILLISECONDS.toNanos(5);
  private static final long BLOCKED_PARK_NS = TimeUnit.MICROSECONDS.toNanos(100);
  private static final int MAX_BATCH = 256;

  private final Transport transport;
  private final Context[] contexts;
  private final Measurements measurements;
  private final RequestMix mix;
  private final LongSupplier clock;
  private final long t0;
  private final ArrivalSchedule schedule;
  private final long measureEndNs;
  private final long maxMeasured;
  private final int maxInFlight;
  private final Thread pacer;
  private final SplittableRandom random = new SplittableRandom(7);

  private volatile boolean stopped;
  private volatile boolean done;
  // Pacer-thread state, read by stop() only after the pacer has been joined.
  private long next;
  private long measuredIssued;
  private long batches;

  public OpenLoopDriver(Transport transport, Context[] contexts, Measurements measurements, RequestMix mix,
      LongSupplier clock, long t0, ArrivalSchedule schedule, long measureEndNs, long maxMeasured, int maxInFlight) {
    this.transport = transport;
    this.contexts = contexts.clone();
    this.measurements = measurements;
    this.mix = mix;
    this.clock = clock;
    this.t0 = t0;
    this.schedule = schedule;
    this.measureEndNs = measureEndNs;
    this.maxMeasured = maxMeasured;
    this.maxInFlight = maxInFlight;
    this.pacer = new Thread(this::pace, "loadgen-pacer");
    pacer.setDaemon(true);
  }

  @Override
  public void start() {
    pacer.start();
  }

  @Override
  public boolean issuingDone() {
    return done;
  }

  private long intendedAt(long i) {
    return t0 + schedule.offsetNs(i);
  }

  private boolean beyondEnd(long intended) {
    return intended - measureEndNs >= 0 || (measurements.isMeasured(intended) && measuredIssued >= maxMeasured);
  }

  private void pace() {
    while (!stopped) {
      long now = clock.getAsLong();
      boolean blocked = false;
      int n = 0;
      int[] entries = null;
      Measurements.Pending[] pending = null;
      while (n < MAX_BATCH) {
        long intended = intendedAt(next);
        if (beyondEnd(intended)) {
          done = true;
          break;
        }
        if (intended - now > 0) {
          break;
        }
        if (!measurements.isMeasured(intended) && measurements.isMeasured(now)) {
          next = Math.max(next + 1, schedule.firstMeasuredIndex());
          continue;
        }
        if (measurements.inFlight() >= maxInFlight) {
          blocked = true;
          break;
        }
        if (entries == null) {
          // Allocated per batch (the task owns them), and only when something is due.
          entries = new int[MAX_BATCH];
          pending = new Measurements.Pending[MAX_BATCH];
        }
        entries[n] = mix.pick(random.nextDouble());
        pending[n] = measurements.begin(intended);
        if (measurements.isMeasured(intended)) {
          measuredIssued++;
        }
        next++;
        n++;
      }
      if (n > 0) {
        dispatch(entries, pending, n);
      }
      if (done) {
        return;
      }
      if (n == MAX_BATCH) {
        continue;
      }
      long wait = blocked ? BLOCKED_PARK_NS : intendedAt(next) - now;
      LockSupport.parkNanos(Math.min(wait, MAX_PARK_NS));
    }
  }

  /**
   * Hands every request that fell due since the last wake-up to one event loop in a single task: one
   * cross-thread wake-up per batch rather than per request, which is what lets one pacer offer tens of
   * thousands of requests per second on a small machine. Each request's latency still starts at its own
   * intended time.
   */
  private void dispatch(int[] entries, Measurements.Pending[] pending, int n) {
    Context ctx = contexts[(int) (batches++ % contexts.length)];
    ctx.runOnContext(v -> {
      for (int i = 0; i < n; i++) {
        Measurements.Pending p = pending[i];
        transport.send(entries[i], outcome -> measurements.complete(p, clock.getAsLong(), outcome));
      }
    });
  }

  @Override
  public void halt() {
    if (stopPacer()) {
      done = true;
    }
  }

  /** Stops the pacer; true once it is gone. */
  private boolean stopPacer() {
    stopped = true;
    LockSupport.unpark(pacer);
    try {
      pacer.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !pacer.isAlive();
  }

  @Override
  public void stop(long endNs) {
    if (!stopPacer()) {
      return;
    }
    // Due but never sent: the generator was blocked by maxInFlight until the run ended.
    for (long intended = intendedAt(next); !beyondEnd(intended) && intended - endNs <= 0; intended = intendedAt(next)) {
      if (measurements.isMeasured(intended)) {
        measurements.recordNeverSent(intended, endNs);
        measuredIssued++;
      }
      next++;
    }
    done = true; // the pacer is gone: nothing more will be issued
  }
}
