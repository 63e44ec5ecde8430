package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import io.kiln.pools.PoolStatus;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Worker crash mid-batch under load: {@code builtin:crash-on-nan} on two nodes, steady closed-loop traffic
 * through both gateways while poison requests (a NaN, which crashes the worker running its batch) arrive
 * now and then. Every normal request must be answered with its own echo (the poison's batch-mates are
 * re-queued), every poison with a clean 503, nothing lost; each crash restarts the worker and reloads its
 * model; the figures give the time from a crash until the pool is whole again.
 */
@Tag("slow")
class WorkerCrashUnderLoadTest {

  static final String YAML = """
      deployments:
        - name: fragile
          version: "1"
          model:
            uri: builtin:crash-on-nan
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 2, worker_resources: {CPU: 0.5}, max_restarts: 10000}
          batching: {max_batch_size: 8, max_batch_delay_ms: 5}
          queue: {max_queued: 256, timeout_ms: 20000}
      """;
  static final Duration SECONDS = Duration.ofSeconds(Figures.knob("crash.seconds", 6));
  static final long POISON_EVERY_MS = Figures.knob("crash.poisonEveryMs", 300);

  @Test
  void normalRequestsAllSucceedPoisonOnesFailCleanlyAndCrashedWorkersComeBackWithTheirModel() throws Exception {
    try (ServingCluster cluster = ServingCluster.start("node-1", "node-2")) {
      cluster.deploy(YAML);
      cluster.awaitReady("fragile", 2);
      List<Integer> ports = List.of(cluster.node("node-1").httpPort(), cluster.node("node-2").httpPort());
      double loadsBefore = loads(cluster);
      LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));

      // Poison on its own schedule, alongside the normal clients.
      CompletableFuture<LoadDriver.Outcome> poison = CompletableFuture.supplyAsync(() -> driver.open(ports,
          1000.0 / POISON_EVERY_MS, SECONDS, i -> LoadDriver.row("fragile", Float.NaN, i)));
      LoadDriver.Outcome normal = driver.closed(ports, 6, SECONDS, i -> LoadDriver.row("fragile", i, -i));
      LoadDriver.Outcome poisoned = poison.get(2, TimeUnit.MINUTES);

      assertThat(normal.lost()).as("lost normal requests: %s", normal.lostReasons()).isZero();
      assertThat(normal.clean()).as("normal requests failed: %s", normal.byStatus()).isZero();
      assertThat(normal.ok()).isEqualTo(normal.sent()).isPositive();
      assertThat(poisoned.lost()).as("lost poison requests: %s", poisoned.lostReasons()).isZero();
      assertThat(poisoned.clean()).as("every poison answered 503").isEqualTo(poisoned.sent()).isPositive();
      assertThat(poisoned.byStatus()).containsOnlyKeys(503);

      // Each poison crashed a worker twice (in its batch, then alone on its retry), unless two poisons shared a
      // first batch; each crash reloads the model.
      await().atMost(ServingCluster.WAIT).until(() -> allReady(cluster));
      long restarts = restarts(cluster);
      assertThat(restarts).isBetween(poisoned.sent(), 2 * poisoned.sent());
      assertThat(loads(cluster) - loadsBefore).isEqualTo(restarts);

      // Recovery of one crash, timed: from the poison's answer until its pool is whole again.
      long recoveryMs = timeOneRecovery(cluster, ports.get(0), driver);

      new Figures("worker-crash").put("nodes", 2).put("workersPerNode", 2).put("seconds", SECONDS.toSeconds())
          .put("normal", normal.figures()).put("poison", poisoned.figures()).put("workerRestarts", restarts)
          .put("modelReloads", Math.round(loads(cluster) - loadsBefore)).put("recoveryMs", recoveryMs).write();
    }
  }

  private static long timeOneRecovery(ServingCluster cluster, int port, LoadDriver driver) {
    long before = restarts(cluster);
    LoadDriver.Outcome one = driver.requests(List.of(port), 1, 1, i -> LoadDriver.row("fragile", Float.NaN, 0));
    long answeredAt = System.nanoTime();
    assertThat(one.clean()).isEqualTo(one.sent()).isOne();
    await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(5))
        .until(() -> restarts(cluster) == before + 2 * one.sent() && allReady(cluster));
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - answeredAt);
  }

  private static List<PoolStatus> statuses(ServingCluster cluster) {
    return cluster.nodeIds().stream()
        .map(n -> ServingCluster.join(cluster.node("node-1").pools().status("fragile", "1", n))).toList();
  }

  private static boolean allReady(ServingCluster cluster) {
    return statuses(cluster).stream().allMatch(s -> s.workers().stream().allMatch(w -> w.state() == WorkerState.READY)
        && s.stats().outstanding() == 0);
  }

  private static long restarts(ServingCluster cluster) {
    return statuses(cluster).stream().flatMap(s -> s.workers().stream()).mapToLong(WorkerStatus::restarts).sum();
  }

  private static double loads(ServingCluster cluster) {
    return cluster.nodeIds().stream().flatMap(n -> cluster.node(n).registry().find("kiln.pool.worker.loads")
        .tag("deployment", "fragile").counters().stream()).mapToDouble(Counter::count).sum();
  }
}
