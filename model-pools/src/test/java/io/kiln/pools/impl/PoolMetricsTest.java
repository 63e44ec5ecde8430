package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.MeterBuckets;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolStats;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.TestWorker;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PoolMetricsTest {

  private final DispatcherHarness h = new DispatcherHarness(
      PoolConfig.builder().maxBatchSize(4).maxBatchDelay(Duration.ofMillis(10)).maxQueued(2).build());

  @AfterEach
  void close() {
    h.close();
  }

  /** The pool's meters, without the per-bucket gauges a SimpleMeterRegistry adds for each histogram. */
  private static List<Meter> own(List<Meter> meters) {
    return meters.stream().filter(m -> !m.getId().getName().endsWith(".histogram")).toList();
  }

  private double gauge(String name, String... tags) {
    return h.registry.get(name).tags(tags).gauge().value();
  }

  @Test
  void metersAndStatsFollowTheWork() {
    TestWorker w = h.addWorker("w1");
    h.submit("a", 2);
    h.clock.advanceMillis(4);
    h.submit("b", 1);
    assertThat(gauge("kiln.pool.queue.depth")).isEqualTo(2);
    assertThat(gauge("kiln.pool.workers", "state", "idle")).isEqualTo(1);
    h.submit("rejected", 1);
    h.clock.advanceMillis(6);
    assertThat(gauge("kiln.pool.queue.depth")).isZero();
    assertThat(gauge("kiln.pool.requests.in.flight")).isEqualTo(2);
    assertThat(gauge("kiln.pool.workers", "state", "busy")).isEqualTo(1);
    assertThat(gauge("kiln.pool.workers", "state", "idle")).isZero();
    assertThat(h.stats()).isEqualTo(new PoolStats(0, 2, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0));

    h.clock.advanceMillis(5);
    w.lastCall().succeed();
    var queueTime = h.registry.get("kiln.pool.queue.duration").timer();
    assertThat(queueTime.count()).isEqualTo(2);
    assertThat(queueTime.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(10 + 6);
    var computeTime = h.registry.get("kiln.pool.compute.duration").timer();
    assertThat(computeTime.count()).isEqualTo(1);
    assertThat(computeTime.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(5);
    var batchSize = h.registry.get("kiln.pool.batch.size").summary();
    assertThat(batchSize.count()).isEqualTo(1);
    assertThat(batchSize.totalAmount()).as("rows").isEqualTo(3);
    assertThat(h.outcomes("ok")).isEqualTo(2);
    assertThat(h.outcomes("rejected")).isEqualTo(1);
    assertThat(gauge("kiln.pool.requests.in.flight")).isZero();
    assertThat(h.stats()).isEqualTo(new PoolStats(0, 0, 0, 1, 0, 1, 2, 1, 0, 0, 0, 0, 0));
  }

  @Test
  void everyMeterCarriesThePoolsTags() {
    assertThat(own(h.registry.getMeters())).hasSize(14).allSatisfy(m -> assertThat(m.getId().getTags())
        .contains(Tag.of("deployment", "mlp"), Tag.of("version", "1"), Tag.of("node", "node-a")));
    assertThat(own(h.registry.getMeters())).extracting(m -> m.getId().getName()).containsOnly("kiln.pool.queue.duration",
        "kiln.pool.compute.duration", "kiln.pool.batch.size", "kiln.pool.requests", "kiln.pool.queue.depth",
        "kiln.pool.queue.capacity", "kiln.pool.requests.in.flight", "kiln.pool.workers");
    assertThat(h.registry.get("kiln.pool.requests").counters()).extracting(c -> c.getId().getTag("outcome"))
        .containsExactlyInAnyOrder("ok", "rejected", "expired", "failed", "cancelled", "invalid");
    assertThat(h.registry.get("kiln.pool.queue.duration").timer().getId().getBaseUnit()).isEqualTo("seconds");
  }

  @Test
  void queueComputeAndBatchSizeAreHistogramsWithTheFixedBucketsAndTheQueueShowsItsCapacity() {
    TestWorker w = h.addWorker("w1");
    h.submit("a", 3);
    h.clock.advanceMillis(10); // the batch delay: dispatched after 10 ms in the queue
    h.clock.advanceMillis(7);
    w.lastCall().succeed();

    var queue = h.registry.get("kiln.pool.queue.duration").timer().takeSnapshot();
    assertThat(queue.histogramCounts()).extracting(c -> c.bucket(TimeUnit.SECONDS))
        .containsExactly(Arrays.stream(MeterBuckets.LATENCY).mapToDouble(d -> d.toNanos() / 1e9).boxed()
            .toArray(Double[]::new));
    assertThat(queue.histogramCounts()).filteredOn(c -> c.bucket(TimeUnit.MILLISECONDS) >= 10)
        .allSatisfy(c -> assertThat(c.count()).isEqualTo(1));
    assertThat(queue.histogramCounts()).filteredOn(c -> c.bucket(TimeUnit.MILLISECONDS) < 10)
        .allSatisfy(c -> assertThat(c.count()).isZero());
    assertThat(queue.percentileValues()).as("no client-side percentiles: they do not aggregate").isEmpty();
    var compute = h.registry.get("kiln.pool.compute.duration").timer().takeSnapshot();
    assertThat(compute.histogramCounts()).hasSize(MeterBuckets.LATENCY.length)
        .filteredOn(c -> c.bucket(TimeUnit.MILLISECONDS) == 10).singleElement()
        .satisfies(c -> assertThat(c.count()).isEqualTo(1));
    var rows = h.registry.get("kiln.pool.batch.size").summary().takeSnapshot();
    assertThat(rows.histogramCounts()).extracting(c -> c.bucket()).containsExactly(
        Arrays.stream(MeterBuckets.ROWS).boxed().toArray(Double[]::new));
    assertThat(rows.histogramCounts()).filteredOn(c -> c.bucket() == 2).singleElement()
        .satisfies(c -> assertThat(c.count()).as("3 rows are not <= 2").isZero());
    assertThat(rows.histogramCounts()).filteredOn(c -> c.bucket() == 4).singleElement()
        .satisfies(c -> assertThat(c.count()).isEqualTo(1));
    assertThat(gauge("kiln.pool.queue.capacity")).isEqualTo(2);
  }

  @Test
  void closingOnePoolRemovesOnlyItsMeters() {
    PoolDispatcher other = new PoolDispatcher(PoolConfig.DEFAULTS, h.clock, h.clock, Runnable::run,
        WorkerFailureListener.NONE, h.registry, PoolDispatcher.meterTags("mlp", "2", "node-a"));
    assertThat(own(h.registry.getMeters())).hasSize(28);
    other.close();
    assertThat(own(h.registry.getMeters())).hasSize(14).extracting(Meter::getId)
        .allSatisfy(id -> assertThat(id.getTag("version")).isEqualTo("1"));
    h.close();
    assertThat(h.registry.getMeters()).isEmpty();
  }

  @Test
  void statsMayBeReadFromAnotherThread() throws Exception {
    h.addWorker("w1");
    h.submit("a", 1);
    PoolStats[] seen = new PoolStats[1];
    Thread t = new Thread(() -> seen[0] = h.dispatcher.stats());
    t.start();
    t.join(10_000);
    assertThat(seen[0]).extracting("queueDepth", "idleWorkers", "totalWorkers").containsExactly(1, 1, 1);
  }

  @Test
  void throughputDecaysWithTime() {
    ManualClock clock = new ManualClock();
    Throughput t = new Throughput(Duration.ofSeconds(5).toNanos(), clock.getAsLong());
    for (int i = 0; i < 600; i++) {
      t.record(1, clock.getAsLong());
      clock.advanceMillis(100);
    }
    assertThat(t.perSecond(clock.getAsLong())).isCloseTo(10, org.assertj.core.data.Offset.offset(0.6));
    clock.advance(Duration.ofSeconds(5));
    assertThat(t.perSecond(clock.getAsLong())).isCloseTo(10 / Math.E, org.assertj.core.data.Offset.offset(0.3));
  }
}
