package io.kiln.pools;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.Resources;
import io.micrometer.core.instrument.Counter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Multiplexed pools (a model repository per pool, models loaded on demand) on a real node with real workers. */
class MultiplexPoolTest {

  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  static ModelRepository identities(int n, int k) {
    List<ModelRepository.Entry> models = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      models.add(new ModelRepository.Entry("m" + i, PoolNodes.builtin("builtin:identity")));
    }
    return ModelRepository.of(models, k);
  }

  static PoolSpec spec(String deployment, ModelRepository repo, int workers) {
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ZERO).build();
    return new PoolSpec(deployment, "1", "a", repo.models().get(0).model(), config, workers, Resources.cpu(1), 0,
        HealthSpec.DEFAULT, repo);
  }

  static InferenceRequest request(String model, float v) {
    return new InferenceRequest("", List.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v})),
        List.of(), Map.of(ModelRepository.MODEL_ID, model));
  }

  static CompletionStage<InferenceResponse> infer(ActorHandle<PoolManager> m, InferenceRequest r) {
    return m.callAsync(PoolManager::infer, r, 60_000L);
  }

  static double count(String meter, String deployment, String... tags) {
    Counter c = nodes.registry("a").find(meter).tag("deployment", deployment).tags(tags).counter();
    return c == null ? 0 : c.count();
  }

  static double loads(String deployment) {
    return count("kiln.pool.multiplex.loads", deployment, "outcome", "ok");
  }

  static List<String> workerModels(String deployment, int index) {
    ActorHandle<ModelWorker> w = result(nodes.node("a").getActor(PoolManager.NAMESPACE,
        PoolNames.worker(deployment, "1", "a", index), ModelWorker.class));
    return result(w.call(ModelWorker::loadedModels));
  }

  @Test
  void requestsGoToTheWorkerThatHoldsTheirModelSoAWarmMixLoadsNothingMore() {
    ActorHandle<PoolManager> m = nodes.start(spec("mux-hold", identities(6, 2), 2), 2);
    assertThat(result(infer(m, request("m0", 1))).outputs().get(0).asFloats()).containsExactly(1, 1, 1, 1);
    result(infer(m, request("m1", 2)));
    result(infer(m, request("m2", 3)));
    result(infer(m, request("m3", 4)));
    assertThat(loads("mux-hold")).isEqualTo(4);
    for (int i = 0; i < 40; i++) { // sequential: every model's holder is idle when its request comes
      InferenceResponse r = result(infer(m, request("m" + i % 4, i)));
      assertThat(r.outputs().get(0).asFloats()).containsExactly(i, i, i, i);
    }
    assertThat(loads("mux-hold")).as("four models over two workers with room for two each: no reload").isEqualTo(4);
    assertThat(count("kiln.pool.multiplex.hits", "mux-hold")).isEqualTo(40);
    assertThat(count("kiln.pool.multiplex.misses", "mux-hold")).isEqualTo(4);
    List<String> all = new ArrayList<>(workerModels("mux-hold", 0));
    all.addAll(workerModels("mux-hold", 1));
    assertThat(all).containsExactlyInAnyOrder("m0", "m1", "m2", "m3");
    assertThat(nodes.registry("a").get("kiln.pool.multiplex.loaded").tag("deployment", "mux-hold").gauge().value())
        .isEqualTo(4);
    assertThat(result(m.call(PoolManager::models))).containsEntry("m0", "READY").containsEntry("m5", "UNAVAILABLE");
  }

  @Test
  void aFullWorkerEvictsItsLeastRecentlyUsedModel() {
    ActorHandle<PoolManager> m = nodes.start(spec("mux-lru", identities(4, 2), 1), 1);
    for (String model : List.of("m0", "m1", "m0", "m2")) { // m1 is the least recently used when m2 comes
      result(infer(m, request(model, 1)));
    }
    assertThat(workerModels("mux-lru", 0)).containsExactly("m0", "m2");
    assertThat(count("kiln.pool.multiplex.evictions", "mux-lru")).isEqualTo(1);
    result(infer(m, request("m0", 1)));
    assertThat(loads("mux-lru")).as("m0 stayed").isEqualTo(3);
    result(infer(m, request("m1", 1)));
    assertThat(loads("mux-lru")).as("m1 was evicted: loaded again").isEqualTo(4);
    assertThat(workerModels("mux-lru", 0)).containsExactly("m0", "m1");
    assertThat(result(m.call(PoolManager::models))).containsEntry("m2", "UNAVAILABLE").containsEntry("m1", "READY");
  }

  @Test
  void concurrentFirstRequestsForAModelWaitForOneLoad(@TempDir Path dir) throws IOException {
    // Real loads that take time: copies of the project's ONNX MLP, each its own model folder.
    List<ModelRepository.Entry> models = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Path folder = Files.createDirectories(dir.resolve("mlp" + i));
      Files.copy(ProjectModels.modelsDir().resolve("mlp-onnx/model.onnx"), folder.resolve("model.onnx"));
      models.add(new ModelRepository.Entry("mlp" + i, ProjectModels.mlpOnnx().uri(folder).intraOpThreads(1)
          .interOpThreads(1).build()));
    }
    ActorHandle<PoolManager> m = nodes.start(spec("mux-once", ModelRepository.of(models, 2), 2), 2);
    List<CompletionStage<InferenceResponse>> answers = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      InferenceRequest r = ProjectModels.mlpRequest(1, i);
      answers.add(infer(m, new InferenceRequest("", r.inputs(), List.of(),
          Map.of(ModelRepository.MODEL_ID, "mlp" + i % 2))));
    }
    answers.forEach(a -> assertThat(result(a, PoolNodes.WAIT).outputs().get(0).shape()).containsExactly(1, 10));
    // Requests for a model being loaded wait for that load. Once it is in, a second worker may load it too when the
    // first is busy (load balancing: on a loaded machine it happens), but no worker ever loads a model twice.
    double loads = loads("mux-once");
    int held = workerModels("mux-once", 0).size() + workerModels("mux-once", 1).size();
    assertThat(loads).as("24 requests for two models not loaded yet: one load per model and worker at most")
        .isBetween(2.0, 4.0).isEqualTo(held);
    assertThat(nodes.registry("a").get("kiln.pool.multiplex.load.duration").tag("deployment", "mux-once").timer().count())
        .isEqualTo((long) loads);
  }

  @Test
  void theRepositoryLoadsAndUnloadsOnRequestAndRefusesUnknownModels() {
    ActorHandle<PoolManager> m = nodes.start(spec("mux-ctl", identities(3, 2), 1), 1);
    assertThat(result(m.callAsync(PoolManager::loadModel, "m2"))).isTrue();
    assertThat(result(m.call(PoolManager::models))).containsEntry("m2", "READY").containsEntry("m0", "UNAVAILABLE");
    assertThat(result(m.callAsync(PoolManager::loadModel, "m2"))).as("held: nothing to load").isFalse();
    result(infer(m, request("m2", 5)));
    assertThat(loads("mux-ctl")).isEqualTo(1);
    assertThat(result(m.callAsync(PoolManager::unloadModel, "m2"))).isEqualTo(1);
    assertThat(result(m.call(PoolManager::models))).containsEntry("m2", "UNAVAILABLE");
    await().atMost(PoolNodes.WAIT).until(() -> workerModels("mux-ctl", 0).isEmpty());

    assertThat(failure(m.callAsync(PoolManager::loadModel, "nope"))).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.NOT_FOUND));
    assertThat(failure(infer(m, request("nope", 1)))).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.NOT_FOUND)).hasMessageContaining("'nope'");
    InferenceRequest unnamed = InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[4]));
    assertThat(failure(infer(m, unnamed))).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT)).hasMessageContaining("model_id");
  }
}
