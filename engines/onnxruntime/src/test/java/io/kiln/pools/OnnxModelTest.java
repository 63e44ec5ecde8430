package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The MLP of models/mlp exported to models/mlp-onnx, run by ONNX Runtime on the CPU. */
@Tag("slow")
class OnnxModelTest {

  private static ModelRunner runner;

  @BeforeAll
  static void load() {
    runner = ModelRunners.load(ProjectModels.mlpOnnx().warmupBatchSizes(1, 8).intraOpThreads(1).interOpThreads(1)
        .build(), List.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  @Test
  void outputMatchesItsExpectedFileAndTorchsOutputForTheSameWeights() {
    List<Tensor> out = runner.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp-onnx")))).get(0);

    assertThat(out).singleElement().satisfies(t -> {
      assertThat(t.name()).isEqualTo("output");
      assertThat(t.datatype()).isEqualTo(DataType.FP32);
      assertThat(t.shape()).containsExactly(2, 10);
    });
    assertClose(out.get(0).asFloats(), ProjectModels.expectedOutput("mlp-onnx").asFloats());
    // models/mlp-onnx holds the weights of models/mlp/mlp.pt: ONNX Runtime agrees with PyTorch.
    assertThat(ProjectModels.expectedInput("mlp").asFloats()).containsExactly(ProjectModels.expectedInput("mlp-onnx").asFloats());
    assertClose(out.get(0).asFloats(), ProjectModels.expectedOutput("mlp").asFloats());
    assertThat(runner.loadInfo().engine()).isEqualTo(ModelSpec.ENGINE_ONNX);
    assertThat(runner.loadInfo().engineVersion()).isEqualTo("1.21.1");
    assertThat(runner.loadInfo().format()).isEqualTo("onnx");
    assertThat(runner.loadInfo().device()).isEqualTo("cpu()");
  }

  @Test
  void batchedRequestsGetExactlyWhatTheyGetAlone() {
    int[] sizes = {1, 3, 1, 2};
    List<InferenceRequest> batch = new ArrayList<>();
    List<Tensor> alone = new ArrayList<>();
    for (int i = 0; i < sizes.length; i++) {
      InferenceRequest r = ProjectModels.mlpRequest(sizes[i], i * 100);
      batch.add(r);
      alone.add(runner.infer(List.of(r)).get(0).get(0));
    }

    List<List<Tensor>> together = runner.infer(batch);

    for (int i = 0; i < sizes.length; i++) {
      assertThat(together.get(i).get(0).shape()).containsExactly(sizes[i], 10);
      assertClose(together.get(i).get(0).asFloats(), alone.get(i).asFloats());
    }
    assertThat(alone.get(0).asFloats()[0]).isNotCloseTo(alone.get(2).asFloats()[0], within(1e-3f));
  }

  @Test
  void theInputBufferKeptFromALargerCallCarriesOnlyEachCallsOwnBytes() {
    // A runner that has run nothing yet: its first call sizes the kept input buffer exactly.
    try (ModelRunner fresh = ModelRunners.load(ProjectModels.mlpOnnx().intraOpThreads(1).interOpThreads(1).build(),
        List.of())) {
      InferenceRequest eight = ProjectModels.mlpRequest(8, 1);
      InferenceRequest two = ProjectModels.mlpRequest(2, 2);
      InferenceRequest five = ProjectModels.mlpRequest(5, 3);
      float[] eightFirst = fresh.infer(List.of(eight)).get(0).get(0).asFloats();
      // Smaller after larger: the 8-row buffer is reused, limited to 2 rows; then 5 rows with other values.
      Tensor twoAfter = fresh.infer(List.of(two)).get(0).get(0);
      Tensor fiveAfter = fresh.infer(List.of(five)).get(0).get(0);
      float[] eightAgain = fresh.infer(List.of(eight)).get(0).get(0).asFloats();

      assertThat(twoAfter.shape()).containsExactly(2, 10);
      assertThat(fiveAfter.shape()).containsExactly(5, 10);
      // Each as the long-lived runner (whose warm-up ran 8 rows) answers it, and as it answered the first time.
      assertClose(twoAfter.asFloats(), runner.infer(List.of(two)).get(0).get(0).asFloats());
      assertClose(fiveAfter.asFloats(), runner.infer(List.of(five)).get(0).get(0).asFloats());
      assertThat(eightAgain).containsExactly(eightFirst);
      assertThat(twoAfter.asFloats()[0]).isNotCloseTo(eightFirst[0], within(1e-3f));
    }
  }

  @Test
  void aSpecThatDoesNotMatchTheModelsSignatureFailsTheLoadNamingEveryMismatch() {
    ModelSpec wrong = ProjectModels.mlpOnnx().inputs(List.of(new TensorSpec("pixels", DataType.FP64, new long[] {-1, 32})))
        .outputs(List.of(new TensorSpec("output", DataType.FP32, new long[] {-1, 10, 1}),
            new TensorSpec("logits", DataType.FP32, new long[] {-1, 10})))
        .build();

    assertThatThrownBy(() -> ModelRunners.load(wrong, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("does not match its spec")
        .hasMessageContaining("input 'pixels' is not in the model, whose inputs are [input]")
        .hasMessageContaining("the model takes input 'input' (ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT[-1, 64]), which the spec does not declare")
        .hasMessageContaining("output 'output' is declared with shape [-1, 10, 1] but the model's has rank 2")
        .hasMessageContaining("output 'logits' is not in the model");
    ModelSpec narrow = ProjectModels.mlpOnnx().inputs(List.of(new TensorSpec("input", DataType.FP64, new long[] {-1, 32})))
        .build();
    assertThatThrownBy(() -> ModelRunners.load(narrow, List.of()))
        .hasMessageContaining("input 'input' is declared FP64 but the model's is ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT")
        .hasMessageContaining("input 'input' dimension 1 is 32 in the spec but fixed to 64 by the model");
  }

  @Test
  void anOnnxSpecTakesNoFormatOrArchitectureAndNeedsOutputs() {
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().format(ModelSpec.FORMAT_TORCHSCRIPT).build())
        .hasMessage("format: an OnnxRuntime model is its .onnx file, remove 'torchscript'");
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().architecture("mlp").build())
        .hasMessage("architecture: an OnnxRuntime model carries its own in its .onnx file, remove 'mlp'");
    assertThatThrownBy(() -> ProjectModels.mlpOnnx().outputs(List.of()).build())
        .hasMessage("outputs: an OnnxRuntime model needs at least one output");
  }

  @Test
  void aGpuThisHostCannotUseIsALoudLoadFailureNeverTheCpu() {
    assertThatThrownBy(() -> ModelRunners.load(ProjectModels.mlpOnnx().build(), List.of(0)))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("GPU 0 is assigned but ONNX Runtime cannot use CUDA here")
        .hasMessageContaining("does not fall back to the CPU unless the model sets allow_cpu_fallback: true");
    try (ModelRunner r = ModelRunners.load(ProjectModels.mlpOnnx().allowCpuFallback(true).build(), List.of(0))) {
      assertThat(r.loadInfo().device()).isEqualTo("cpu()");
    }
  }

  @Test
  void theModelFileIsFoundOrTheFolderSaysWhyNot(@TempDir Path dir) throws Exception {
    Path source = ProjectModels.modelsDir().resolve("mlp-onnx").resolve("model.onnx");
    Path renamed = Files.createDirectories(dir.resolve("one"));
    Files.copy(source, renamed.resolve("mlp.onnx"));
    try (ModelRunner r = ModelRunners.load(ProjectModels.mlpOnnx().uri(renamed).build(), List.of())) {
      assertThat(r.loadInfo().format()).isEqualTo("onnx");
    }
    try (ModelRunner r = ModelRunners.load(ProjectModels.mlpOnnx().uri(renamed.resolve("mlp.onnx")).build(), List.of())) {
      assertThat(r.loadInfo().device()).isEqualTo("cpu()");
    }
    Path two = Files.createDirectories(dir.resolve("two"));
    Files.copy(source, two.resolve("a.onnx"));
    Files.copy(source, two.resolve("b.onnx"));
    assertThatThrownBy(() -> ModelRunners.load(ProjectModels.mlpOnnx().uri(two).build(), List.of()))
        .hasMessageContaining("holds several .onnx files [a.onnx, b.onnx]");
    Path none = Files.createDirectories(dir.resolve("none"));
    assertThatThrownBy(() -> ModelRunners.load(ProjectModels.mlpOnnx().uri(none).build(), List.of()))
        .hasMessageContaining("holds no .onnx file");
    Files.writeString(none.resolve("model.onnx"), "not a protobuf");
    assertThatThrownBy(() -> ModelRunners.load(ProjectModels.mlpOnnx().uri(none).build(), List.of()))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("did not load into OnnxRuntime");
  }

  @Test
  void aPoolOfOnnxWorkersBatchesAndAnswersEachRequestWithItsOwnRows() {
    try (PoolNodes nodes = new PoolNodes("a")) {
      PoolConfig batching = PoolConfig.builder().maxBatchSize(4).maxBatchDelay(java.time.Duration.ofMillis(50)).build();
      ActorHandle<PoolManager> m = nodes.start(spec("onnx", "a", ProjectModels.mlpOnnx().intraOpThreads(1).build(),
          batching, 2, 1), 2);
      List<InferenceRequest> requests = new ArrayList<>();
      List<CompletionStage<InferenceResponse>> answers = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        InferenceRequest r = ProjectModels.mlpRequest(1 + i % 3, i);
        requests.add(r);
        answers.add(m.callAsync(PoolManager::infer, r, 60_000L));
      }
      for (int i = 0; i < requests.size(); i++) {
        Tensor got = result(answers.get(i), PoolNodes.WAIT).outputs().get(0);
        assertClose(got.asFloats(), runner.infer(List.of(requests.get(i))).get(0).get(0).asFloats());
      }
    }
  }

  private static void assertClose(float[] actual, float[] expected) {
    assertThat(actual).hasSameSizeAs(expected);
    for (int i = 0; i < actual.length; i++) {
      assertThat(actual[i]).as("element " + i).isCloseTo(expected[i], within(1e-5f));
    }
  }
}
