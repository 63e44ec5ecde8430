package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.builtin;
import static io.kiln.pools.testsupport.PoolNodes.mlp;
import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kiln.engines.builtin.impl.BuiltinModels;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorNotFoundException;
import io.micrometer.core.instrument.distribution.HistogramSnapshot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A pool manager and its workers on a real runtime node, with the real MLP (DJL/PyTorch on the CPU). */
@Tag("slow")
class PoolManagerTest {

  private static PoolNodes nodes;
  private static ModelRunner direct;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
    direct = ModelRunners.load(mlp(), List.of());
  }

  @AfterAll
  static void stop() {
    nodes.close();
    direct.close();
  }

  private static CompletionStage<InferenceResponse> infer(ActorHandle<PoolManager> m, InferenceRequest r, long timeoutMs) {
    return m.callAsync(PoolManager::infer, r, timeoutMs);
  }

  private static HistogramSnapshot batches(String deployment) {
    return nodes.registry("a").get("kiln.pool.batch.size").tag("deployment", deployment).summary().takeSnapshot();
  }

  @Test
  void outputsThroughThePoolEqualTheModelsOwnBatchedOrNotAndEachRequestGetsItsRows() {
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ofMillis(20)).build();
    ActorHandle<PoolManager> m = nodes.start(spec("mlp-out", "a", mlp(), config, 1, 0), 1);

    InferenceRequest fixture = new InferenceRequest("fixture", List.of(ProjectModels.expectedInput("mlp")), List.of(), Map.of());
    InferenceResponse r = result(infer(m, fixture, 10_000));
    assertThat(r.id()).isEqualTo("fixture");
    assertThat(r.modelName()).isEqualTo("mlp-out");
    assertThat(r.modelVersion()).isEqualTo("1");
    assertThat(r.outputs()).singleElement().satisfies(t -> {
      assertThat(t.name()).isEqualTo("output");
      assertThat(t.shape()).containsExactly(2, 10);
      assertClose(t, ProjectModels.expectedOutput("mlp"));
    });
    assertThat(r.parameters()).containsEntry("kiln_node", "a").containsKeys("kiln_queue_ms", "kiln_compute_ms");

    int[] rows = {1, 3, 2, 1, 4};
    for (int i = 0; i < rows.length; i++) { // one at a time: batches of one request
      InferenceRequest req = ProjectModels.mlpRequest(rows[i], i);
      assertClose(result(infer(m, req, 10_000)).outputs().get(0), direct.infer(List.of(req)).get(0).get(0));
    }

    long batchesBefore = batches("mlp-out").count();
    List<InferenceRequest> burst = new ArrayList<>();
    List<CompletionStage<InferenceResponse>> answers = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      burst.add(ProjectModels.mlpRequest(1 + i % 3, 100 + i));
      answers.add(infer(m, burst.get(i), 10_000));
    }
    for (int i = 0; i < burst.size(); i++) {
      Tensor out = result(answers.get(i)).outputs().get(0);
      assertThat(out.shape()).containsExactly(1 + i % 3, 10);
      assertClose(out, direct.infer(List.of(burst.get(i))).get(0).get(0));
    }
    assertThat(batches("mlp-out").count() - batchesBefore).as("the burst was batched").isLessThan(12);
  }

  @Test
  void concurrentRequestsFormBatchesUpToTheMaximumAndALoneOneWaitsOnlyTheDelay() {
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ofMillis(100)).build();
    ActorHandle<PoolManager> m = nodes.start(spec("mlp-batch", "a", mlp(), config, 1, 0), 1);

    List<CompletionStage<InferenceResponse>> answers = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      answers.add(infer(m, ProjectModels.mlpRequest(1, i), 10_000));
    }
    answers.forEach(a -> assertThat(result(a).outputs().get(0).shape()).containsExactly(1, 10));
    HistogramSnapshot s = batches("mlp-batch");
    assertThat(s.total()).isEqualTo(32);
    assertThat(s.max()).isGreaterThan(1).isLessThanOrEqualTo(8);
    assertThat(s.count()).isBetween(4L, 31L);

    InferenceResponse lone = result(infer(m, ProjectModels.mlpRequest(1, 99), 10_000));
    assertThat((double) lone.parameters().get("kiln_queue_ms")).as("waited for a fuller batch, then went")
        .isGreaterThanOrEqualTo(99.0).isLessThan(100.0 + 5_000);
  }

  @Test
  void aFullQueueRefusesAtOnceAndQueuedRequestsRunWhenAWorkerArrives() {
    PoolConfig config = PoolConfig.builder().maxQueued(2).maxBatchDelay(Duration.ZERO).build();
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(nodes.node("a"),
        spec("cap", "a", builtin(BuiltinModels.IDENTITY), config, 0, 0)));
    InferenceRequest r1 = InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {1, 2, 3, 4}));
    InferenceRequest r2 = InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {5, 6, 7, 8}));
    CompletionStage<InferenceResponse> a = infer(m, r1, 60_000);
    CompletionStage<InferenceResponse> b = infer(m, r2, 60_000);

    Throwable refused = failure(infer(m, r1, 60_000), Duration.ofSeconds(10));
    assertThat(refused).isInstanceOfSatisfying(CapacityExceededException.class, e -> {
      assertThat(e.kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE);
      assertThat(e.retryAfter()).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(30));
    }).hasMessageContaining("queue is full");
    assertThat(result(m.call(PoolManager::stats))).extracting("queueDepth", "rejected").containsExactly(2, 1L);

    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    assertThat(result(a).outputs().get(0).asFloats()).containsExactly(1, 2, 3, 4);
    assertThat(result(b).outputs().get(0).asFloats()).containsExactly(5, 6, 7, 8);
  }

  @Test
  void anExpiredRequestFailsWithDeadlineExceededAndNeverRuns() {
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(nodes.node("a"),
        spec("deadline", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 0, 0)));
    InferenceRequest r = InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[4]));

    Throwable t = failure(infer(m, r, 300));
    assertThat(t).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.DEADLINE_EXCEEDED)).hasMessageContaining("queued");

    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    assertThat(batches("deadline").count()).as("nothing ran").isZero();
    result(infer(m, r, 10_000));
    assertThat(batches("deadline").count()).isEqualTo(1);
    assertThat(result(m.call(PoolManager::stats))).extracting("expired", "completed").containsExactly(1L, 1L);
  }

  @Test
  void invalidRequestsAreRefusedAloneWithoutFailingTheirBatch() {
    PoolConfig config = PoolConfig.builder().maxBatchSize(4).maxBatchDelay(Duration.ofMillis(200)).build();
    ActorHandle<PoolManager> m = nodes.start(spec("mlp-invalid", "a", mlp(), config, 1, 0), 1);
    CompletionStage<InferenceResponse> good = infer(m, ProjectModels.mlpRequest(1, 1), 10_000);
    InferenceRequest narrow = InferenceRequest.of(Tensor.ofFloats("input", new long[] {1, 63}, new float[63]));
    Throwable bad = failure(infer(m, narrow, 10_000));
    assertThat(bad).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT)).hasMessageContaining("input 'input'");
    assertThat(result(good).outputs().get(0).shape()).containsExactly(1, 10);
    assertThat(result(m.call(PoolManager::stats))).extracting("invalid", "completed").containsExactly(1L, 1L);
  }

  @Test
  void drainAnswersWhatIsQueuedWithoutWaitingRefusesNewWorkThenKillsTheWorkers() {
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ofSeconds(30)).build();
    PoolSpec spec = spec("drain", "a", builtin(BuiltinModels.IDENTITY), config, 2, 0);
    ActorHandle<PoolManager> m = nodes.start(spec, 2);
    List<CompletableFuture<InferenceResponse>> queued = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      queued.add(infer(m, InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {i, i, i, i})), 60_000)
          .toCompletableFuture());
    }
    CompletionStage<Void> drained = m.callAsync(PoolManager::drain);
    Throwable late = failure(infer(m, InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[4])), 60_000));

    for (int i = 0; i < 3; i++) {
      assertThat(result(queued.get(i), Duration.ofSeconds(20)).outputs().get(0).asFloats()).containsExactly(i, i, i, i);
    }
    assertThat(late).isInstanceOf(InferenceException.class).hasMessageContaining("draining");
    result(drained);
    PoolStatus status = result(m.call(PoolManager::status));
    assertThat(status.draining()).isTrue();
    assertThat(status.ready()).isFalse();
    assertThat(status.workers()).isEmpty();
    assertThat(failure(nodes.node("a").getActor(PoolManager.NAMESPACE, PoolNames.worker("drain", "1", "a", 0),
        ModelWorker.class))).isInstanceOf(ActorNotFoundException.class);
  }

  @Test
  void aLeavingPoolReportsItselfDrainingButReadyAndServesWhatIsQueuedAndWhatStillArrives() {
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ofMillis(200)).build();
    PoolSpec spec = spec("leave", "a", builtin(BuiltinModels.IDENTITY), config, 1, 0);
    ActorHandle<PoolManager> m = nodes.start(spec, 1);
    PoolLoadBoard board = new PoolLoadBoard(nodes.node("a"));
    try {
      result(board.ready());
      CompletableFuture<InferenceResponse> queued = infer(m, InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4},
          new float[] {1, 2, 3, 4})), 60_000).toCompletableFuture();
      result(m.run(PoolManager::leave));
      InferenceResponse late = result(infer(m, InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4},
          new float[] {5, 6, 7, 8})), 60_000));

      assertThat(late.outputs().get(0).asFloats()).containsExactly(5, 6, 7, 8);
      assertThat(result(queued).outputs().get(0).asFloats()).containsExactly(1, 2, 3, 4);
      PoolStatus status = result(m.call(PoolManager::status));
      assertThat(status.draining()).isTrue();
      assertThat(status.ready()).isTrue();
      assertThat(status.workers()).hasSize(1);
      org.awaitility.Awaitility.await().atMost(PoolNodes.WAIT).until(() -> board.pools("leave", "1").stream()
          .anyMatch(PoolLoad::leaving));
    } finally {
      board.close();
      result(m.callAsync(PoolManager::drain), PoolNodes.WAIT);
    }
  }

  @Test
  void scalingAddsOnlyWhatTheNodesResourcesHoldAndRetiresTheHighestWorkersFirst() {
    PoolSpec spec = new PoolSpec("scale", "1", "a", builtin(BuiltinModels.IDENTITY), PoolConfig.DEFAULTS, 1,
        io.kiln.runtime.Resources.of(PoolNodes.SLOT, 1), 0);
    ActorHandle<PoolManager> m = nodes.start(spec, 1);

    assertThat(result(m.callAsync(PoolManager::scale, 10), PoolNodes.WAIT)).as("3 slots on the node").isEqualTo(3);
    assertThat(result(m.call(PoolManager::status)).workers()).extracting(WorkerStatus::index, WorkerStatus::state)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(0, WorkerState.READY),
            org.assertj.core.groups.Tuple.tuple(1, WorkerState.READY), org.assertj.core.groups.Tuple.tuple(2, WorkerState.READY));
    assertThat(result(m.call(PoolManager::stats)).idleWorkers()).isEqualTo(3);

    assertThat(result(m.callAsync(PoolManager::scale, 1), PoolNodes.WAIT)).isEqualTo(1);
    assertThat(result(m.call(PoolManager::status)).workers()).extracting(WorkerStatus::index).containsExactly(0);
    assertThat(result(m.call(PoolManager::stats)).totalWorkers()).isEqualTo(1);
    assertThat(failure(nodes.node("a").getActor(PoolManager.NAMESPACE, PoolNames.worker("scale", "1", "a", 2),
        ModelWorker.class))).isInstanceOf(ActorNotFoundException.class);
    assertThat(result(m.callAsync(PoolManager::scale, 2), PoolNodes.WAIT)).as("the slots were freed").isEqualTo(2);
    result(m.callAsync(PoolManager::drain), PoolNodes.WAIT);
  }

  static void assertClose(Tensor actual, Tensor expected) {
    float[] a = actual.asFloats();
    float[] e = expected.asFloats();
    assertThat(actual.shape()).containsExactly(expected.shape());
    for (int i = 0; i < a.length; i++) {
      assertThat(a[i]).as("element %d", i).isCloseTo(e[i], within(1e-5f));
    }
  }
}
