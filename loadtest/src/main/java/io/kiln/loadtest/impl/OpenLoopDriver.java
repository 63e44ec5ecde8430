package io.kiln.loadtest.impl;

import io.kiln.loadtest.RequestMix;
import io.vertx.core.Context;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Constant arrival rate without coordinated omission. Request {@code i} is due at
 * {@code t0 + i/rate}; a pacer thread hands each due request to an event loop, and its latency is
 * measured from that <em>intended</em> time. If the generator falls behind, the server stalls, or the
 * connection pool is exhausted, requests go out late (or wait in the pool) and the delay is counted as
 * latency, as a user arriving at that moment would experience it. At most {@code maxInFlight} requests
 * are outstanding; further due requests wait in the pacer, still timed from their intended time.
 */
public final class OpenLoopDriver implements Driver {
  private static final long MAX_PARK_NS = TimeUnit.MILLISECONDS.toNanos(5);
  private static final long BLOCKED_PARK_NS = TimeUnit.MICROSECONDS.toNanos(100);

  private final Transport transport;
  private final Context[] contexts;
  private final Measurements measurements;
  private final RequestMix mix;
  private final LongSupplier clock;
  private final long t0;
  private final double periodNs;
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

  public OpenLoopDriver(Transport transport, Context[] contexts, Measurements measurements, RequestMix mix,
      LongSupplier clock, long t0, double rate, long measureEndNs, long maxMeasured, int maxInFlight) {
    this.transport = transport;
    this.contexts = contexts.clone();
    this.measurements = measurements;
    this.mix = mix;
    this.clock = clock;
    this.t0 = t0;
    this.periodNs = 1e9 / rate;
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
    return t0 + (long) (i * periodNs);
  }

  private boolean beyondEnd(long intended) {
    return intended - measureEndNs >= 0 || (measurements.isMeasured(intended) && measuredIssued >= maxMeasured);
  }

  private void pace() {
    while (!stopped) {
      long now = clock.getAsLong();
      boolean blocked = false;
      while (true) {
        long intended = intendedAt(next);
        if (beyondEnd(intended)) {
          done = true;
          return;
        }
        if (intended - now > 0) {
          break;
        }
        if (measurements.inFlight() >= maxInFlight) {
          blocked = true;
          break;
        }
        dispatch(intended);
      }
      long wait = blocked ? BLOCKED_PARK_NS : intendedAt(next) - now;
      LockSupport.parkNanos(Math.min(wait, MAX_PARK_NS));
    }
  }

  private void dispatch(long intended) {
    int entry = mix.pick(random.nextDouble());
    Measurements.Pending p = measurements.begin(intended);
    if (measurements.isMeasured(intended)) {
      measuredIssued++;
    }
    Context ctx = contexts[(int) (next % contexts.length)];
    next++;
    ctx.runOnContext(v -> transport.send(entry, outcome -> measurements.complete(p, clock.getAsLong(), outcome)));
  }

  @Override
  public void stop(long endNs) {
    stopped = true;
    LockSupport.unpark(pacer);
    try {
      pacer.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (pacer.isAlive()) {
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
  }
}
