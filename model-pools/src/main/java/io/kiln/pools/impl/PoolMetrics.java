package io.kiln.pools.impl;

import io.kiln.pools.MeterBuckets;
import io.kiln.pools.PoolStats;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One pool's live counts, history counters and Micrometer meters. Written only by the dispatcher's
 * thread; read by any thread ({@link #snapshot()}, gauges scraped by a registry), which is why the live
 * counts are volatile and the counters are published with release stores.
 *
 * <p>Meters (base units; tagged with the pool's deployment, version and node): histograms with the fixed
 * {@link MeterBuckets} {@code kiln.pool.queue.duration} (Timer, per dispatch), {@code kiln.pool.compute.duration}
 * (Timer, per batch) and {@code kiln.pool.batch.size} (DistributionSummary, rows per batch);
 * {@code kiln.pool.requests} (Counter tagged {@code outcome}); gauges {@code kiln.pool.queue.depth},
 * {@code kiln.pool.queue.capacity} (the configured {@code max_queued}), {@code kiln.pool.requests.in.flight} and
 * {@code kiln.pool.workers} tagged {@code state} idle/busy. Two live pools must not share the same tags:
 * Micrometer would hand both the same meters, and closing one would remove the other's.
 */
final class PoolMetrics implements AutoCloseable {

  private final MeterRegistry registry;
  private final List<Meter> meters = new ArrayList<>();
  private final Timer queueTime;
  private final Timer computeTime;
  private final DistributionSummary batchSize;
  private final Counter[] outcomeCounters = new Counter[Outcome.values().length];

  // Indexed by Outcome.ordinal(), then requeued last.
  private final AtomicLongArray counts = new AtomicLongArray(Outcome.values().length + 1);
  private static final int REQUEUED = Outcome.values().length;

  private volatile int queueDepth;
  private volatile int inFlightRequests;
  private volatile int inFlightBatches;
  private volatile int idleWorkers;
  private volatile int busyWorkers;
  private volatile int totalWorkers;

  /** The tags that identify one pool's meters. */
  static Tags tags(String deployment, String version, String node) {
    return Tags.of("deployment", deployment, "version", version, "node", node);
  }

  /** @param capacity the queue's {@code max_queued}, exported as a gauge for alerts on a nearly full queue */
  PoolMetrics(MeterRegistry registry, Iterable<Tag> tags, int capacity) {
    this.registry = registry;
    queueTime = add(MeterBuckets.latency(Timer.builder("kiln.pool.queue.duration"))
        .description("Time a request waited in the pool's queue before a worker took it")
        .tags(tags).register(registry));
    computeTime = add(MeterBuckets.latency(Timer.builder("kiln.pool.compute.duration"))
        .description("Time a worker took to execute one batch").tags(tags).register(registry));
    batchSize = add(MeterBuckets.rows(DistributionSummary.builder("kiln.pool.batch.size"))
        .description("Rows per dispatched batch").baseUnit("rows").tags(tags).register(registry));
    for (Outcome o : Outcome.values()) {
      outcomeCounters[o.ordinal()] = add(Counter.builder("kiln.pool.requests")
          .description("Requests that left the pool, by outcome").tags(tags).tag("outcome", o.tag)
          .register(registry));
    }
    add(Gauge.builder("kiln.pool.queue.depth", this, m -> m.queueDepth)
        .description("Requests waiting for a worker").tags(tags).register(registry));
    add(Gauge.builder("kiln.pool.queue.capacity", () -> capacity).strongReference(true)
        .description("Requests the queue holds at most (max_queued); more are refused").tags(tags).register(registry));
    add(Gauge.builder("kiln.pool.requests.in.flight", this, m -> m.inFlightRequests)
        .description("Requests being executed by workers").tags(tags).register(registry));
    add(Gauge.builder("kiln.pool.workers", this, m -> m.idleWorkers)
        .description("Workers by state").tags(tags).tag("state", "idle").register(registry));
    add(Gauge.builder("kiln.pool.workers", this, m -> m.busyWorkers)
        .description("Workers by state").tags(tags).tag("state", "busy").register(registry));
  }

  private <M extends Meter> M add(M meter) {
    meters.add(meter);
    return meter;
  }

  void outcome(Outcome o) {
    outcomeCounters[o.ordinal()].increment();
    increment(o.ordinal());
  }

  void requeued(int n) {
    counts.setRelease(REQUEUED, counts.getPlain(REQUEUED) + n);
  }

  void dispatched(long queuedNanos) {
    queueTime.record(queuedNanos, TimeUnit.NANOSECONDS);
  }

  void batchStarted(long rows) {
    batchSize.record(rows);
  }

  void batchDone(long computeNanos) {
    computeTime.record(computeNanos, TimeUnit.NANOSECONDS);
  }

  int queueDepth() {
    return queueDepth;
  }

  void queueDepth(int depth) {
    queueDepth = depth;
  }

  void inFlight(int requests, int batches) {
    inFlightRequests = requests;
    inFlightBatches = batches;
  }

  void workers(int idle, int busy, int total) {
    idleWorkers = idle;
    busyWorkers = busy;
    totalWorkers = total;
  }

  PoolStats snapshot() {
    return new PoolStats(queueDepth, inFlightRequests, inFlightBatches, idleWorkers, busyWorkers, totalWorkers,
        count(Outcome.OK), count(Outcome.REJECTED), count(Outcome.EXPIRED), count(Outcome.FAILED),
        count(Outcome.INVALID), count(Outcome.CANCELLED), counts.getAcquire(REQUEUED));
  }

  /** Removes this pool's meters from the registry; idempotent. */
  @Override
  public void close() {
    for (Meter m : meters) {
      registry.remove(m);
    }
    meters.clear();
  }

  private void increment(int i) {
    counts.setRelease(i, counts.getPlain(i) + 1);
  }

  private long count(Outcome o) {
    return counts.getAcquire(o.ordinal());
  }
}
