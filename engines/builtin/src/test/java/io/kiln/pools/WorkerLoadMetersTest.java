package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.builtin;
import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.engines.builtin.impl.DiagnosticModels;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.runtime.ActorHandle;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A real pool's workers record what their loads took ({@code kiln.pool.worker.load.duration},
 * {@code kiln.pool.worker.warmup.duration}, histograms with the {@link MeterBuckets#LOAD} buckets) and count their
 * restarts ({@code kiln.pool.worker.restarts}), per deployment, version and node.
 */
class WorkerLoadMetersTest {

  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  private Timer timer(String name, String deployment) {
    return nodes.registry("a").find(name).tags("deployment", deployment, "version", "1", "node", "a").timer();
  }

  private double restarts(String deployment) {
    Counter c = nodes.registry("a").find("kiln.pool.worker.restarts").tag("deployment", deployment).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void eachLoadRecordsItsLoadAndWarmupTimesAndEachRestartCounts() {
    ActorHandle<PoolManager> m = nodes.start(spec("loads", "a", builtin(DiagnosticModels.CRASH_ON_NAN),
        PoolConfig.DEFAULTS, 2, 5), 2);
    assertThat(timer("kiln.pool.worker.load.duration", "loads").count()).as("two workers, one load each").isEqualTo(2);
    assertThat(timer("kiln.pool.worker.warmup.duration", "loads").count()).isEqualTo(2);
    assertThat(timer("kiln.pool.worker.load.duration", "loads").takeSnapshot().histogramCounts())
        .hasSize(MeterBuckets.LOAD.length);
    assertThat(nodes.registry("a").find("kiln.pool.worker.restarts").tag("deployment", "loads").counter())
        .as("first loads are no restarts, but the series is there at 0").isNotNull()
        .satisfies(c -> assertThat(c.count()).isZero());

    InferenceRequest nan = new InferenceRequest("nan", List.of(Tensor.ofFloats("x", new long[] {1, 4},
        new float[] {Float.NaN, 0, 0, 0})), List.of(), Map.of());
    assertThat(failure(m.callAsync(PoolManager::infer, nan, 30_000L))).isInstanceOf(InferenceException.class);

    await().atMost(PoolNodes.WAIT).until(() -> PoolNodes.awaitReady(m, 2).workers().stream()
        .mapToLong(WorkerStatus::restarts).sum() == restarts("loads") && restarts("loads") > 0);
    long restarted = result(m.call(PoolManager::status)).workers().stream().mapToLong(WorkerStatus::restarts).sum();
    assertThat(timer("kiln.pool.worker.load.duration", "loads").count()).as("each restart reloads")
        .isEqualTo(2 + restarted);
    assertThat(nodes.loads("a", "loads")).isEqualTo(2 + restarted);
  }
}
