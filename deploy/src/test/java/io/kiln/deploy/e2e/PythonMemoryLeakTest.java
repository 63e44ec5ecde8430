package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import io.kiln.pools.PoolStats;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import io.kiln.serve.DeploymentStatus;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Python model that leaks memory until the OS kills it: its {@code predict} allocates and keeps a few MiB per
 * call, and each worker's process runs in a memory cgroup of its own ({@link MemoryCgroup}, made by the test:
 * Kiln has no per-worker memory limit), so the kernel's OOM killer SIGKILLs it when it outgrows the limit. Under
 * closed-loop load: the batch in the killed process is re-queued (or fails cleanly), nothing is lost, the worker
 * comes back with a fresh process, and each restart counts in {@code kiln.pool.worker.restarts}. Then a crash
 * loop: a model whose {@code load} already outgrows the limit is restarted {@code max_restarts} times, no more,
 * and its deployment goes FAILED naming the out-of-memory kill.
 */
@Tag("slow")
class PythonMemoryLeakTest {

  static final String MODEL_PY = """
      import numpy as np


      class Model:
          def load(self, config, device):
              self.kept = []
              self.leak = int(config.get("leak_mb", 8)) << 20
              at_load = int(config.get("at_load_mb", 0)) << 20
              if at_load:
                  self.kept.append(np.ones(at_load // 8))

          def predict(self, inputs):
              self.kept.append(np.ones(self.leak // 8))  # written, so resident: the leak the cgroup sees
              return {"y": inputs["x"].copy()}
      """;
  static final String YAML = """
      deployments:
        - name: %s
          version: "1"
          model:
            uri: %s
            engine: Python
            python: {interpreter: %s, config: {leak_mb: 8, at_load_mb: %d}, startup_timeout_ms: 120000}
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
            threads: {intra_op: 1}
          pool: {workers_per_node: 2, worker_resources: {CPU: 0.5}, max_restarts: %d}
          batching: {max_batch_size: 4, max_batch_delay_ms: 2}
          queue: {max_queued: 256, timeout_ms: 30000}
      """;
  static final String NODE = "node-1";
  static final long LIMIT_MB = 160;
  static final int KILLS = (int) Figures.knob("leak.kills", 4);

  @Test
  void aLeakingWorkerIsKilledByTheOsAndRestartedAndACrashLoopIsBounded(@TempDir Path dir) throws Exception {
    io.kiln.deploy.Prerequisites.need("PythonMemoryLeakTest",
        MemoryCgroup.available() ? null : "no writable memory cgroup hierarchy (it needs root and cgroup v2)");
    Path model = PythonWorkers.modelFolder(dir, "model", MODEL_PY);
    try (MemoryCgroup cgroup = MemoryCgroup.create("kiln-leak-test", LIMIT_MB << 20);
         ServingCluster cluster = ServingCluster.start(NODE)) {
      Path python = cgroup.wrapper(dir, PythonInterpreter.path());
      cluster.deploy(YAML.formatted("py-leak", model, python, 0, 1000));
      cluster.awaitReady("py-leak", 1);
      int port = cluster.node(NODE).httpPort();
      LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
      long startedAt = System.nanoTime();
      LoadDriver.Running load = driver.start(List.of(port), 4, i -> LoadDriver.row("py-leak", i, -i));

      await().atMost(ServingCluster.WAIT.multipliedBy(2)).pollInterval(Duration.ofMillis(50))
          .until(() -> PythonWorkers.restarts(cluster, "py-leak", NODE) >= KILLS);
      long killsSeenMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedAt);
      LoadDriver.Outcome o = load.stop();
      long recoveryStart = System.nanoTime();
      await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(20))
          .until(() -> PythonWorkers.whole(cluster, "py-leak", NODE, 2));
      long wholeAgainMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - recoveryStart);
      PoolStats stats = cluster.stats("py-leak", "1", NODE);
      List<WorkerStatus> workers = PythonWorkers.workers(cluster, "py-leak", NODE);
      long restarts = PythonWorkers.restarts(cluster, "py-leak", NODE);
      long oomKills = cgroup.oomKills();

      assertThat(o.lost()).as("lost: %s", o.lostReasons()).isZero();
      assertThat(o.ok() + o.clean()).isEqualTo(o.sent());
      assertThat(o.ok()).isPositive();
      assertThat(oomKills).as("the kernel's OOM killer did the killing").isGreaterThanOrEqualTo(KILLS);
      assertThat(workers).anySatisfy(w -> assertThat(w.lastError()).contains("SIGKILL: out of memory"));
      assertThat(PythonWorkers.restartsMetric(cluster, "py-leak", NODE)).as("kiln.pool.worker.restarts")
          .isEqualTo((double) restarts);
      assertThat(stats.requeued()).as("killed batches re-queued").isPositive();

      // A crash loop: the model outgrows the limit in load, every time. Bounded by max_restarts, then FAILED.
      int maxRestarts = 3;
      long appliedAt = System.nanoTime();
      cluster.deploy(YAML.formatted("py-oom-load", model, python, 2 * LIMIT_MB, maxRestarts));
      await().atMost(ServingCluster.WAIT.multipliedBy(2)).pollInterval(Duration.ofMillis(50))
          .until(() -> phase(cluster, "py-oom-load") == DeploymentStatus.Phase.FAILED);
      long failedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - appliedAt);
      String failure = cluster.node(NODE).serve().statuses().get("py-oom-load").failure();
      assertThat(failure).contains("SIGKILL: out of memory");
      double loopRestarts = PythonWorkers.restartsMetric(cluster, "py-oom-load", NODE);
      assertThat(loopRestarts).as("restarts of 2 workers").isLessThanOrEqualTo(2.0 * maxRestarts);
      // It stays bounded: more traffic elsewhere, no more attempts.
      LoadDriver.Outcome after = driver.closed(List.of(port), 2, Duration.ofSeconds(2),
          i -> LoadDriver.row("py-leak", i, i));
      assertThat(after.lost()).isZero();
      assertThat(PythonWorkers.restartsMetric(cluster, "py-oom-load", NODE)).isEqualTo(loopRestarts);

      new Figures("python-oom").put("cgroup", cgroup.version).put("limitMiB", LIMIT_MB).put("leakMiBPerBatch", 8)
          .put("workers", 2).put("clients", 4).put("oomKills", oomKills).put("workerRestarts", restarts)
          .put("requeued", stats.requeued()).put("killsSeenAfterMs", killsSeenMs).put("wholeAgainMs", wholeAgainMs)
          .put("lastErrors", workers.stream().map(WorkerStatus::lastError).filter(e -> e != null)
              .map(e -> e.length() > 240 ? e.substring(0, 240) + "…" : e).toList())
          .put("load", o.figures())
          .put("crashLoop", java.util.Map.of("maxRestarts", maxRestarts, "workers", 2,
              "restarts", Math.round(loopRestarts), "failedAfterMs", failedMs,
              "failure", failure.length() > 300 ? failure.substring(0, 300) + "…" : failure))
          .write();
      assertThat(workers).allSatisfy(w -> assertThat(w.state()).isEqualTo(WorkerState.READY));
    }
  }

  private static DeploymentStatus.Phase phase(ServingCluster cluster, String name) {
    DeploymentStatus s = cluster.node(NODE).serve().statuses().get(name);
    return s == null ? null : s.phase();
  }
}
