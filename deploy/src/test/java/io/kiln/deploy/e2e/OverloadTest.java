package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.Figures;
import io.kiln.pools.PoolStats;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Overload: a pool whose capacity is set by its model ({@code builtin:sleep}: one worker, batches of up to 2
 * rows that each take {@value #SLEEP_MS} ms, at most {@value #MAX_QUEUED} queued), measured first (closed
 * loop), then offered {@value #FACTOR}× that capacity open loop, then measured again. Admitted requests
 * keep their latency (the short queue bounds it), the rest get a fast 503 with {@code Retry-After}, nothing
 * is lost, heap stays bounded, and right after the overload the latency is as before.
 *
 * <p>CI runs {@value #CI_SECONDS} s of overload; {@code reliability/run.sh overload} runs 30 s
 * ({@code -Dkiln.reliability.overload.seconds=30}).
 */
@Tag("slow")
class OverloadTest {

  static final int SLEEP_MS = 50;
  static final int MAX_QUEUED = 4;
  static final int FACTOR = 10;
  static final int CI_SECONDS = 5;
  /** Scheduling slack on a loaded 2-core machine; still 20x below the queue timeout the bounds rule out. */
  static final int SLACK_MS = 500;
  static final Duration OVERLOAD = Duration.ofSeconds(Figures.knob("overload.seconds", CI_SECONDS));
  static final Duration MEASURE = Duration.ofSeconds(Figures.knob("overload.measureSeconds", 4));

  static final String YAML = """
      deployments:
        - name: slow
          version: "1"
          model:
            uri: builtin:sleep
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 2, max_batch_delay_ms: 0}
          queue: {max_queued: %d, timeout_ms: 10000}
      """.formatted(MAX_QUEUED);

  @Test
  void tenTimesCapacityAdmitsWhatFitsRefusesTheRestFastAndRecoversAtOnce() {
    try (ServingCluster cluster = ServingCluster.start("node-1")) {
      cluster.deploy(YAML);
      cluster.awaitReady("slow", 1);
      List<Integer> port = List.of(cluster.node("node-1").httpPort());
      LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
      java.util.function.IntFunction<LoadDriver.Request> row = i -> LoadDriver.row("slow", SLEEP_MS, -i);

      driver.closed(port, 4, Duration.ofSeconds(1), row); // warm-up
      long heapBefore = Figures.heapAfterGc();
      long rssBefore = Figures.rssBytes();
      // Capacity: enough clients to keep the worker's batches full and a batch queued behind them.
      LoadDriver.Outcome normal = driver.closed(port, 4, MEASURE, row);
      double capacity = normal.throughput();
      assertThat(normal.lost()).as("%s", normal.lostReasons()).isZero();
      assertThat(normal.ok()).isEqualTo(normal.sent());

      LoadDriver.Outcome over = driver.open(port, FACTOR * capacity, OVERLOAD, row);
      long heapAfter = Figures.heapAfterGc();
      long rssAfter = Figures.rssBytes();

      LoadDriver.Outcome after = driver.closed(port, 4, MEASURE, row);
      PoolStats stats = cluster.stats("slow", "1", "node-1");

      new Figures("overload").put("model", "builtin:sleep " + SLEEP_MS + " ms, 1 worker, batch 2, max_queued "
              + MAX_QUEUED).put("capacityPerSecond", Math.round(capacity)).put("offeredPerSecond", Math.round(FACTOR * capacity))
          .put("normal", normal.figures()).put("overload", over.figures()).put("after", after.figures())
          .put("heapAfterGcBeforeBytes", heapBefore).put("heapAfterGcAfterBytes", heapAfter)
          .put("rssBeforeBytes", rssBefore).put("rssAfterBytes", rssAfter)
          .put("poolRejected", stats.rejected()).write();

      assertThat(over.lost()).as("lost: %s", over.lostReasons()).isZero();
      assertThat(over.ok() + over.clean()).isEqualTo(over.sent());
      assertThat(over.byStatus()).containsOnlyKeys(200, 503);
      assertThat(over.clean()).as("most of a 10x offer is refused").isGreaterThan(over.sent() / 2);
      assertThat(over.ok()).as("while the pool stays busy").isPositive();
      // Admitted requests wait behind at most MAX_QUEUED others, never for the 10 s queue timeout: within 2x the
      // normal p99 plus slack for a shared, loaded 2-core machine (a GC pause or a descheduled event loop).
      assertThat(over.okP99Millis()).isLessThanOrEqualTo(2 * normal.okP99Millis() + SLACK_MS);
      assertThat(over.cleanP99Millis()).as("refusals are fast, not a queue timeout").isLessThan(2 * SLACK_MS);
      assertThat(after.lost() + after.clean()).isZero();
      assertThat(after.okP99Millis()).as("recovered at once").isLessThanOrEqualTo(2 * normal.okP99Millis() + SLACK_MS);
      assertThat(heapAfter - heapBefore).as("heap growth").isLessThan(128L << 20);
      assertThat(stats.outstanding()).isZero();

    }
  }
}
