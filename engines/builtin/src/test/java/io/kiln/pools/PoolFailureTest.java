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
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Workers that crash mid-batch ({@code builtin:crash-on-nan}: a batch holding a NaN throws a
 * {@link ModelExecutionException}, as a crashing model would): nothing is lost or hangs, the worker is
 * restarted (its model reloaded) while restarts remain, then dropped and reported.
 */
@Tag("slow")
class PoolFailureTest {

  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  private static InferenceRequest row(String id, float v) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v})),
        List.of(), java.util.Map.of());
  }

  private static CompletionStage<InferenceResponse> infer(ActorHandle<PoolManager> m, InferenceRequest r) {
    return m.callAsync(PoolManager::infer, r, 30_000L);
  }

  // Three rows fill a batch at once; alone they would wait a whole second for company.
  private static final PoolConfig BATCH_OF_THREE =
      PoolConfig.builder().maxBatchSize(3).maxBatchDelay(Duration.ofSeconds(1)).build();

  @Test
  void aCrashMidBatchLosesNothingAndTheRestartedWorkerServesAgain() {
    ActorHandle<PoolManager> m = nodes.start(spec("crash", "a", builtin(DiagnosticModels.CRASH_ON_NAN), BATCH_OF_THREE,
        1, 5), 1);
    String workerId = result(m.call(PoolManager::status)).workers().get(0).actorId();
    double loadsBefore = nodes.loads("a", "crash");

    CompletionStage<InferenceResponse> a = infer(m, row("a", 1));
    CompletionStage<InferenceResponse> poison = infer(m, row("poison", Float.NaN));
    CompletionStage<InferenceResponse> b = infer(m, row("b", 2));

    assertThat(result(a).outputs().get(0).asFloats()).containsExactly(1, 1, 1, 1);
    assertThat(result(b).outputs().get(0).asFloats()).containsExactly(2, 2, 2, 2);
    assertThat(failure(poison)).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE)).hasMessageContaining("NaN");
    PoolStats stats = result(m.call(PoolManager::stats));
    assertThat(stats.requeued()).as("the whole first batch was re-queued").isEqualTo(3);
    assertThat(stats).extracting("completed", "failed").containsExactly(2L, 1L);

    // Crashed twice: in the batch of three, then alone on its retry.
    PoolStatus status = PoolNodes.awaitReady(m, 1);
    WorkerStatus w = status.workers().get(0);
    assertThat(w.actorId()).as("restarted, not replaced").isEqualTo(workerId);
    assertThat(w.restarts()).isEqualTo(2);
    assertThat(w.lastError()).contains("NaN");
    assertThat(nodes.loads("a", "crash")).as("each restart reloads the model").isEqualTo(loadsBefore + 2);
    assertThat(result(infer(m, row("after", 3))).outputs().get(0).asFloats()).containsExactly(3, 3, 3, 3);
  }

  @Test
  void workersWithNoRestartsLeftAreDroppedAndReportedAndNothingHangs() {
    ActorHandle<PoolManager> m = nodes.start(spec("fragile", "a", builtin(DiagnosticModels.CRASH_ON_NAN), PoolConfig.DEFAULTS,
        2, 0), 2);

    Throwable t = failure(infer(m, row("poison", Float.NaN)));
    assertThat(t).isInstanceOf(InferenceException.class).hasMessageContaining("NaN");

    await().atMost(PoolNodes.WAIT).until(() -> result(m.call(PoolManager::status)).count(WorkerState.DEAD) == 2);
    PoolStatus status = result(m.call(PoolManager::status));
    assertThat(status.ready()).isFalse();
    assertThat(status.workers()).allSatisfy(w -> {
      assertThat(w.state()).isEqualTo(WorkerState.DEAD);
      assertThat(w.lastError()).isNotBlank();
    });
    assertThat(status.stats().totalWorkers()).isZero();

    // Nothing hangs: with no worker left a request waits only until its deadline.
    Throwable waited = failure(m.callAsync(PoolManager::infer, row("late", 1), 300L));
    assertThat(waited).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.DEADLINE_EXCEEDED));

    // Scaling up re-creates dead workers under their names, with fresh models.
    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    assertThat(result(infer(m, row("again", 5))).outputs().get(0).asFloats()).containsExactly(5, 5, 5, 5);
  }
}
