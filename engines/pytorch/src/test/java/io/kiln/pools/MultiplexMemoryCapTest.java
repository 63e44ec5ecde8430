package io.kiln.pools;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.impl.WorkerModels;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import io.micrometer.core.instrument.Counter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A multiplexed pool's memory cap ({@link ModelRepository#maxModelBytes()}) over real ONNX models: copies of the
 * project's MLP, whose runner reports its file's size (77,128 bytes) as the memory it holds.
 */
@Tag("slow")
class MultiplexMemoryCapTest {

  private static final long MLP_BYTES = 77_128;
  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  private static List<ModelRepository.Entry> mlps(Path dir, int n) throws IOException {
    List<ModelRepository.Entry> models = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Path folder = Files.createDirectories(dir.resolve("mlp" + i));
      Files.copy(ProjectModels.modelsDir().resolve("mlp-onnx/model.onnx"), folder.resolve("model.onnx"));
      models.add(new ModelRepository.Entry("mlp" + i, ProjectModels.mlpOnnx().uri(folder).intraOpThreads(1)
          .interOpThreads(1).build()));
    }
    return models;
  }

  private static InferenceResponse infer(ActorHandle<PoolManager> m, String model) {
    return result(m.callAsync(PoolManager::infer, named(model), 60_000L), PoolNodes.WAIT);
  }

  private static InferenceRequest named(String model) {
    InferenceRequest r = ProjectModels.mlpRequest(1, 3);
    return new InferenceRequest("", r.inputs(), List.of(), Map.of(ModelRepository.MODEL_ID, model));
  }

  private static List<String> held(String deployment) {
    ActorHandle<ModelWorker> w = result(nodes.node("a").getActor(PoolManager.NAMESPACE,
        PoolNames.worker(deployment, "1", "a", 0), ModelWorker.class));
    return result(w.call(ModelWorker::loadedModels));
  }

  @Test
  void aWorkerEvictsItsLeastRecentlyUsedModelsUntilTheNewOneFitsUnderTheCap(@TempDir Path dir) throws IOException {
    assertThat(Files.size(ProjectModels.modelsDir().resolve("mlp-onnx/model.onnx"))).isEqualTo(MLP_BYTES);
    // Room for two MLPs (154,256 bytes), not three; the count cap (8) never binds.
    ModelRepository repo = new ModelRepository(mlps(dir, 4), 8, 2, 2 * MLP_BYTES + MLP_BYTES / 2);
    ActorHandle<PoolManager> m = nodes.start(MultiplexPoolTest.spec("cap-lru", repo, 1), 1);

    for (String model : List.of("mlp0", "mlp1", "mlp0", "mlp2")) { // mlp1 is the least recently used when mlp2 comes
      assertThat(infer(m, model).outputs().get(0).shape()).containsExactly(1, 10);
    }
    assertThat(held("cap-lru")).containsExactly("mlp0", "mlp2");
    assertThat(memoryEvictions("cap-lru")).isEqualTo(1);

    infer(m, "mlp3"); // evicts mlp0 now
    assertThat(held("cap-lru")).containsExactly("mlp2", "mlp3");
    assertThat(memoryEvictions("cap-lru")).isEqualTo(2);
    assertThat(infer(m, "mlp1").outputs().get(0).shape()).as("an evicted model loads again").containsExactly(1, 10);
    assertThat(held("cap-lru")).containsExactly("mlp3", "mlp1");
  }

  @Test
  void aModelBiggerThanTheCapFailsItsRequestAndItsLoadClearlyAndTheWorkerServesOn(@TempDir Path dir)
      throws IOException {
    List<ModelRepository.Entry> models = new ArrayList<>(mlps(dir, 1));
    models.add(new ModelRepository.Entry("echo", PoolNodes.builtin("builtin:identity")));
    ModelRepository repo = new ModelRepository(models, 4, 2, MLP_BYTES / 2);
    ActorHandle<PoolManager> m = nodes.start(MultiplexPoolTest.spec("cap-big", repo, 1), 1);

    assertThat(failure(m.callAsync(PoolManager::infer, named("mlp0"), 60_000L))).isInstanceOfSatisfying(
        InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INTERNAL))
        .hasMessageContaining("model 'mlp0' holds 0.074 MiB").hasMessageContaining("max_memory_mb of 0.037 MiB");
    assertThat(failure(m.callAsync(PoolManager::loadModel, "mlp0"))).hasMessageContaining("max_memory_mb");
    assertThat(held("cap-big")).isEmpty();

    InferenceResponse echo = result(m.callAsync(PoolManager::infer, MultiplexPoolTest.request("echo", 7), 60_000L));
    assertThat(echo.outputs().get(0).asFloats()).as("a built-in reports 0 bytes: it fits").containsExactly(7, 7, 7, 7);
    assertThat(held("cap-big")).containsExactly("echo");
  }

  @Test
  void aCapOverAnEngineThatCannotReportMemoryIsRefusedNotIgnored() {
    ModelRepository.Entry torch = new ModelRepository.Entry("t", ProjectModels.mlp().build());
    assertThatThrownBy(() -> new ModelRepository(List.of(torch), 4, 2, 1 << 20))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("model 't'")
        .hasMessageContaining("engine PyTorch does not report");
    assertThat(new ModelRepository(List.of(torch), 4, 2).maxModelBytes()).as("without a cap it is fine").isZero();
  }

  private static double memoryEvictions(String deployment) {
    Counter c = nodes.registry("a").find(WorkerModels.MEMORY_EVICTIONS).tag("deployment", deployment).counter();
    return c == null ? 0 : c.count();
  }
}
