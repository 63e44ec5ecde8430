package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.PythonTests;
import io.kiln.runtime.ActorHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Python workers in a real pool (a pool manager and its worker actors on an in-process node), with the
 * faulty test model: a process that dies mid-batch (its own {@code os._exit}, or SIGKILL from outside) or
 * hangs loses no request and its worker is restarted with a fresh process; a predict that raises fails
 * its batch alone and leaves the worker as it was.
 */
@Tag("slow")
class PythonPoolTest {

  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    PythonTests.interpreter(); // fail here, clearly, without Python and numpy
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  // Three rows fill a batch at once; alone they would wait a whole second for company.
  private static final PoolConfig BATCH_OF_THREE =
      PoolConfig.builder().maxBatchSize(3).maxBatchDelay(Duration.ofSeconds(1)).build();

  private static InferenceRequest row(String id, float v) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v})),
        List.of(), Map.of());
  }

  private static CompletionStage<InferenceResponse> infer(ActorHandle<PoolManager> m, InferenceRequest r) {
    return m.callAsync(PoolManager::infer, r, 60_000L);
  }

  private static float[] out(CompletionStage<InferenceResponse> r) {
    return result(r, PoolNodes.WAIT).outputs().get(0).asFloats();
  }

  private static ModelSpec faulty(Map<String, Object> config, Duration requestTimeout) {
    ModelSpec spec = PythonTests.faulty(config).build();
    return spec.toBuilder().python(spec.python().toBuilder().requestTimeout(requestTimeout).build()).build();
  }

  @Test
  void aProcessThatExitsMidBatchLosesNothingAndItsWorkerRestartsWithAFreshProcess() {
    ActorHandle<PoolManager> m = nodes.start(spec("py-exit", "a", faulty(Map.of(), Duration.ofSeconds(30)),
        BATCH_OF_THREE, 1, 5), 1);
    double loadsBefore = nodes.loads("a", "py-exit");

    CompletionStage<InferenceResponse> a = infer(m, row("a", 1));
    CompletionStage<InferenceResponse> poison = infer(m, row("poison", 66));
    CompletionStage<InferenceResponse> b = infer(m, row("b", 2));

    assertThat(out(a)).containsExactly(2, 2, 2, 2);
    assertThat(out(b)).containsExactly(4, 4, 4, 4);
    assertThat(failure(poison, PoolNodes.WAIT)).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE)).hasMessageContaining("exit code 3");
    assertThat(result(m.call(PoolManager::stats)).requeued()).as("the whole first batch was re-queued").isEqualTo(3);

    WorkerStatus w = PoolNodes.awaitReady(m, 1).workers().get(0);
    assertThat(w.restarts()).as("in the batch of three, then alone on its retry").isEqualTo(2);
    assertThat(w.lastError()).contains("exit code 3");
    assertThat(nodes.loads("a", "py-exit")).as("each restart reloads the model").isEqualTo(loadsBefore + 2);
    assertThat(out(infer(m, row("after", 3)))).containsExactly(6, 6, 6, 6);
  }

  @Test
  void aProcessKilledFromOutsideMidBatchLosesNothing(@TempDir Path markers) {
    ActorHandle<PoolManager> m = nodes.start(spec("py-kill", "a", faulty(Map.of("marker_dir", markers.toString()),
        Duration.ofSeconds(30)), BATCH_OF_THREE, 1, 3), 1);
    String worker = PoolNames.worker("py-kill", "1", "a", 0);
    List<ProcessHandle> before = PythonTests.processesOf(worker);
    assertThat(before).as("one process per worker").hasSize(1);

    CompletionStage<InferenceResponse> a = infer(m, row("a", 1));
    CompletionStage<InferenceResponse> slow = infer(m, row("slow", 88)); // sleeps the first time only
    CompletionStage<InferenceResponse> b = infer(m, row("b", 2));
    await().atMost(PoolNodes.WAIT).until(() -> Files.exists(markers.resolve("started")));
    before.get(0).destroyForcibly();

    assertThat(out(a)).containsExactly(2, 2, 2, 2);
    assertThat(out(slow)).containsExactly(176, 176, 176, 176);
    assertThat(out(b)).containsExactly(4, 4, 4, 4);
    WorkerStatus w = PoolNodes.awaitReady(m, 1).workers().get(0);
    assertThat(w.restarts()).isEqualTo(1);
    assertThat(w.lastError()).contains("SIGKILL");
    assertThat(PythonTests.processesOf(worker)).singleElement()
        .satisfies(p -> assertThat(p.pid()).isNotEqualTo(before.get(0).pid()));
  }

  @Test
  void aWorkersProcessIsTheOomKillersFirstChoiceNotTheJvm() throws Exception {
    nodes.start(spec("py-oom-adj", "a", faulty(Map.of(), Duration.ofSeconds(30)), PoolConfig.DEFAULTS, 1, 0), 1);
    ProcessHandle p = PythonTests.processesOf(PoolNames.worker("py-oom-adj", "1", "a", 0)).get(0);
    Path adj = Path.of("/proc", Long.toString(p.pid()), "oom_score_adj");
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.exists(adj), "Linux /proc");
    assertThat(Files.readString(adj).strip()).isEqualTo("1000");
    assertThat(Files.readString(Path.of("/proc/self/oom_score_adj")).strip()).as("the JVM's own is untouched")
        .isNotEqualTo("1000");
  }

  @Test
  void aRaisingPredictFailsItsBatchWithPythonsMessageAndTheWorkerStays() {
    ActorHandle<PoolManager> m = nodes.start(spec("py-raise", "a", faulty(Map.of(), Duration.ofSeconds(30)),
        BATCH_OF_THREE, 1, 3), 1);
    double loadsBefore = nodes.loads("a", "py-raise");

    List<CompletionStage<InferenceResponse>> batch = List.of(infer(m, row("a", 1)), infer(m, row("bad", 13)),
        infer(m, row("b", 2)));
    for (CompletionStage<InferenceResponse> r : batch) {
      assertThat(failure(r, PoolNodes.WAIT)).isInstanceOfSatisfying(InferenceException.class,
              e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INTERNAL))
          .hasMessageContaining("predict raised ValueError: unlucky 13 in a batch of 3 rows");
    }
    PoolStats stats = result(m.call(PoolManager::stats));
    assertThat(stats.requeued()).as("a model error is not retried").isZero();
    assertThat(stats.failed()).isEqualTo(3);
    assertThat(out(infer(m, row("after", 3)))).containsExactly(6, 6, 6, 6);
    WorkerStatus w = result(m.call(PoolManager::status)).workers().get(0);
    assertThat(w.state()).isEqualTo(WorkerState.READY);
    assertThat(w.restarts()).isZero();
    assertThat(nodes.loads("a", "py-raise")).isEqualTo(loadsBefore);
  }

  @Test
  void aHangingPredictIsKilledAtItsTimeoutAndTheWorkerRestarts() {
    ActorHandle<PoolManager> m = nodes.start(spec("py-hang", "a", faulty(Map.of(), Duration.ofSeconds(1)),
        PoolConfig.DEFAULTS, 1, 3), 1);

    assertThat(failure(infer(m, row("hang", 77)), PoolNodes.WAIT)).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE))
        .hasMessageContaining("did not answer 'predict' within 1000 ms, so it was killed");
    WorkerStatus w = PoolNodes.awaitReady(m, 1).workers().get(0);
    assertThat(w.restarts()).as("killed twice: first try and its one re-queue").isEqualTo(2);
    assertThat(out(infer(m, row("after", 5)))).containsExactly(10, 10, 10, 10);
  }
}
