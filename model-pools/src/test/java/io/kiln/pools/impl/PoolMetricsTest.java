package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolStats;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.ManualClock;
import io.kiln.pools.testing.TestWorker;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import java.time.Duration;
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
    assertThat(gauge("kiln.pool.inflight")).isEqualTo(2);
    assertThat(gauge("kiln.pool.workers", "state", "busy")).isEqualTo(1);
    assertThat(gauge("kiln.pool.workers", "state", "idle")).isZero();
    assertThat(h.stats()).isEqualTo(new PoolStats(0, 2, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0));

    h.clock.advanceMillis(5);
    w.lastCall().succeed();
    var queueTime = h.registry.get("kiln.pool.queue.time").timer();
    assertThat(queueTime.count()).isEqualTo(2);
    assertThat(queueTime.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(10 + 6);
    var computeTime = h.registry.get("kiln.pool.compute.time").timer();
    assertThat(computeTime.count()).isEqualTo(1);
    assertThat(computeTime.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(5);
    var batchSize = h.registry.get("kiln.pool.batch.size").summary();
    assertThat(batchSize.count()).isEqualTo(1);
    assertThat(batchSize.totalAmount()).as("rows").isEqualTo(3);
    assertThat(h.outcomes("ok")).isEqualTo(2);
    assertThat(h.outcomes("rejected")).isEqualTo(1);
    assertThat(gauge("kiln.pool.inflight")).isZero();
    assertThat(h.stats()).isEqualTo(new PoolStats(0, 0, 0, 1, 0, 1, 2, 1, 0, 0, 0, 0, 0));
  }

  @Test
  void everyMeterCarriesThePoolsTags() {
    assertThat(h.registry.getMeters()).hasSize(13).allSatisfy(m -> assertThat(m.getId().getTags())
        .contains(Tag.of("deployment", "mlp"), Tag.of("version", "1"), Tag.of("node", "node-a")));
    assertThat(h.registry.getMeters()).extracting(m -> m.getId().getName()).containsOnly("kiln.pool.queue.time",
        "kiln.pool.compute.time", "kiln.pool.batch.size", "kiln.pool.requests", "kiln.pool.queue.depth",
        "kiln.pool.inflight", "kiln.pool.workers");
    assertThat(h.registry.get("kiln.pool.requests").counters()).extracting(c -> c.getId().getTag("outcome"))
        .containsExactlyInAnyOrder("ok", "rejected", "expired", "failed", "cancelled", "invalid");
    assertThat(h.registry.get("kiln.pool.queue.time").timer().getId().getBaseUnit()).isEqualTo("seconds");
  }

  @Test
  void closingOnePoolRemovesOnlyItsMeters() {
    PoolDispatcher other = new PoolDispatcher(PoolConfig.DEFAULTS, h.clock, h.clock, Runnable::run,
        WorkerFailureListener.NONE, h.registry, PoolDispatcher.meterTags("mlp", "2", "node-a"));
    assertThat(h.registry.getMeters()).hasSize(26);
    other.close();
    assertThat(h.registry.getMeters()).hasSize(13).extracting(Meter::getId)
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
