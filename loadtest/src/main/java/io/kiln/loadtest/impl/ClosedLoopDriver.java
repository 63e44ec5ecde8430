package io.kiln.loadtest.impl;

import io.kiln.loadtest.RequestMix;
import io.vertx.core.Context;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * {@code users} loops, each with exactly one request in flight: send, wait for the outcome, send again.
 * Latency runs from the actual send, so this measures service time under a self-limiting load; it is
 * the naive benchmark that slows down with the server and under-reports stalls. Each user runs on one
 * event-loop context.
 */
public final class ClosedLoopDriver implements Driver {
  private final Transport transport;
  private final Context[] contexts;
  private final Measurements measurements;
  private final RequestMix mix;
  private final LongSupplier clock;
  private final long measureEndNs;
  private final long maxMeasured;
  private final int users;
  private final AtomicInteger activeUsers = new AtomicInteger();
  private final AtomicLong measuredIssued = new AtomicLong();
  private volatile boolean stopped;

  public ClosedLoopDriver(Transport transport, Context[] contexts, Measurements measurements, RequestMix mix,
      LongSupplier clock, long measureEndNs, long maxMeasured, int users) {
    this.transport = transport;
    this.contexts = contexts.clone();
    this.measurements = measurements;
    this.mix = mix;
    this.clock = clock;
    this.measureEndNs = measureEndNs;
    this.maxMeasured = maxMeasured;
    this.users = users;
  }

  @Override
  public void start() {
    activeUsers.set(users);
    for (int u = 0; u < users; u++) {
      Context ctx = contexts[u % contexts.length];
      ctx.runOnContext(v -> next(ctx));
    }
  }

  private void next(Context ctx) {
    long now = clock.getAsLong();
    if (stopped || now - measureEndNs >= 0
        || (measurements.isMeasured(now) && measuredIssued.getAndIncrement() >= maxMeasured)) {
      activeUsers.decrementAndGet();
      return;
    }
    int entry = mix.pick(ThreadLocalRandom.current().nextDouble());
    Measurements.Pending p = measurements.begin(now);
    transport.send(entry, outcome -> {
      measurements.complete(p, clock.getAsLong(), outcome);
      if (outcome.kind() == Outcome.Kind.CONNECTION_ERROR) {
        // A refused connection can fail synchronously; hop through the queue so the stack cannot grow.
        ctx.runOnContext(v -> next(ctx));
      } else {
        next(ctx);
      }
    });
  }

  @Override
  public boolean issuingDone() {
    return activeUsers.get() == 0;
  }

  @Override
  public void stop(long endNs) {
    stopped = true;
  }

  @Override
  public void halt() {
    stopped = true; // a user's next request is not sent; nothing is due here
  }
}
