package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.Figures;
import io.kiln.pools.PoolStats;
import io.kiln.pools.WorkerState;
import io.kiln.pools.WorkerStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Python worker's process SIGKILLed mid-batch, under a real pool and closed-loop load: a deployment of the
 * Python engine (two workers, batching on) on an assembled node, traffic through its gateway, and the process
 * of one worker killed from outside (as the OOM killer or {@code kill -9} would) while its {@code predict} is
 * running — the model marks a batch in progress with a file named after its pid. The batch in it is re-queued
 * onto the other worker (or fails cleanly with a 503), its batch-mates are not lost, the worker gets a fresh
 * process with its model reloaded, and the pool is whole again; repeated a few times, the figures give how long
 * the pool took to see each kill and to recover from it.
 */
@Tag("slow")
class PythonWorkerKillTest {

  static final String MODEL_PY = """
      import os
      import time


      class Model:
          def load(self, config, device):
              self.busy = os.path.join(config["marker_dir"], "busy-%d" % os.getpid())
              self.delay = float(config.get("delay_s", 0.03))

          def predict(self, inputs):
              x = inputs["x"]
              with open(self.busy, "w") as f:
                  f.write(str(x.shape[0]))
              time.sleep(self.delay)
              os.remove(self.busy)
              return {"y": x.copy()}
      """;
  static final String YAML = """
      deployments:
        - name: py-kill
          version: "1"
          model:
            uri: %s
            engine: Python
            python: {interpreter: %s, config: {marker_dir: %s, delay_s: 0.03}, request_timeout_ms: 20000}
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
            threads: {intra_op: 1}
          pool: {workers_per_node: 2, worker_resources: {CPU: 0.5}, max_restarts: 100}
          batching: {max_batch_size: 8, max_batch_delay_ms: 5}
          queue: {max_queued: 256, timeout_ms: 30000}
      """;
  static final String NODE = "node-1";
  static final int WORKERS = 2;
  static final int CLIENTS = 6;
  static final int KILLS = (int) Figures.knob("pykill.kills", 3);

  @Test
  void aKilledProcessLosesNoRequestAndItsWorkerComesBackWithAFreshProcess(@TempDir Path dir) throws Exception {
    Path markers = Files.createDirectories(dir.resolve("markers"));
    Path model = PythonWorkers.modelFolder(dir, "model", MODEL_PY);
    try (ServingCluster cluster = ServingCluster.start(NODE)) {
      cluster.deploy(YAML.formatted(model, PythonInterpreter.path(), markers));
      cluster.awaitReady("py-kill", 1);
      int port = cluster.node(NODE).httpPort();
      double restartsBefore = PythonWorkers.restartsMetric(cluster, "py-kill", NODE);
      double loadsBefore = PythonWorkers.loadsMetric(cluster, "py-kill", NODE);
      LoadDriver driver = new LoadDriver(ServingCluster.REQUEST_TIMEOUT, Duration.ofSeconds(5));
      LoadDriver.Running load = driver.start(List.of(port), CLIENTS, i -> LoadDriver.row("py-kill", i, -i));

      List<Long> detectionMs = new ArrayList<>();
      List<Long> recoveryMs = new ArrayList<>();
      List<Integer> rowsInKilledBatch = new ArrayList<>();
      for (int k = 0; k < KILLS; k++) {
        int index = k % WORKERS;
        long answeredBefore = load.sofar().ok();
        await().atMost(ServingCluster.WAIT).until(() -> load.sofar().ok() > answeredBefore + 20);
        ProcessHandle victim = PythonWorkers.process("py-kill", NODE, index).orElseThrow();
        Path busy = markers.resolve("busy-" + victim.pid());
        await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(1)).until(() -> Files.exists(busy));
        rowsInKilledBatch.add(readRows(busy));
        int restartsOfVictim = worker(cluster, index).restarts();
        long killedAt = System.nanoTime();
        assertThat(victim.destroyForcibly()).isTrue(); // SIGKILL on Linux

        await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(2)).until(() -> {
          WorkerStatus w = worker(cluster, index);
          return w.state() != WorkerState.READY || w.restarts() > restartsOfVictim;
        });
        detectionMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt));
        await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(5)).until(() ->
            PythonWorkers.whole(cluster, "py-kill", NODE, WORKERS) && worker(cluster, index).restarts() > restartsOfVictim
                && PythonWorkers.process("py-kill", NODE, index).filter(p -> p.pid() != victim.pid()).isPresent());
        recoveryMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt));
        assertThat(worker(cluster, index).lastError()).contains("SIGKILL");
      }
      long answeredAfter = load.sofar().ok();
      await().atMost(ServingCluster.WAIT).until(() -> load.sofar().ok() > answeredAfter + 20);
      LoadDriver.Outcome o = load.stop();
      PoolStats stats = cluster.stats("py-kill", "1", NODE);

      assertThat(o.lost()).as("lost: %s", o.lostReasons()).isZero();
      assertThat(o.ok() + o.clean()).isEqualTo(o.sent());
      assertThat(o.ok()).isPositive();
      assertThat(stats.requeued()).as("each killed batch was re-queued").isGreaterThanOrEqualTo(KILLS);
      assertThat(PythonWorkers.restartsMetric(cluster, "py-kill", NODE) - restartsBefore)
          .as("kiln.pool.worker.restarts").isGreaterThanOrEqualTo(KILLS);
      assertThat(PythonWorkers.loadsMetric(cluster, "py-kill", NODE) - loadsBefore).as("each restart reloads")
          .isGreaterThanOrEqualTo(KILLS);
      assertThat(stats.outstanding()).isZero();

      new Figures("python-sigkill").put("workers", WORKERS).put("clients", CLIENTS).put("kills", KILLS)
          .put("rowsInKilledBatches", rowsInKilledBatch).put("requeued", stats.requeued())
          .put("workerRestarts", Math.round(PythonWorkers.restartsMetric(cluster, "py-kill", NODE) - restartsBefore))
          .put("detectionMs", detectionMs).put("recoveryMs", recoveryMs)
          .put("detectionMsMax", detectionMs.stream().mapToLong(Long::longValue).max().orElse(0))
          .put("recoveryMsMax", recoveryMs.stream().mapToLong(Long::longValue).max().orElse(0))
          .put("load", o.figures()).write();
    }
  }

  private static WorkerStatus worker(ServingCluster cluster, int index) {
    return PythonWorkers.workers(cluster, "py-kill", NODE).stream().filter(w -> w.index() == index).findFirst()
        .orElseThrow();
  }

  // The marker may be caught between its creation and its first write: a batch is in the process either way.
  private static int readRows(Path busy) {
    try {
      String s = Files.readString(busy).strip();
      return s.isEmpty() ? -1 : Integer.parseInt(s);
    } catch (java.io.IOException | NumberFormatException e) {
      return -1;
    }
  }
}
