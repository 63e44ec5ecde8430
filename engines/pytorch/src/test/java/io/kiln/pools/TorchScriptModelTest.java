package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.kiln.pools.testsupport.ProjectModels;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The TorchScript MLP in models/mlp, run through DJL's PyTorch engine on the CPU. */
class TorchScriptModelTest {

  private static ModelRunner runner;

  @BeforeAll
  static void load() {
    runner = ModelRunners.load(ProjectModels.mlp().warmupBatchSizes(1, 8).build(), List.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  @Test
  void outputMatchesTorch() {
    Tensor input = ProjectModels.expectedInput("mlp");
    Tensor expected = ProjectModels.expectedOutput("mlp");

    List<Tensor> out = runner.infer(List.of(InferenceRequest.of(input))).get(0);

    assertThat(out).hasSize(1);
    assertThat(out.get(0).name()).isEqualTo("output");
    assertThat(out.get(0).datatype()).isEqualTo(DataType.FP32);
    assertThat(out.get(0).shape()).containsExactly(2, 10);
    assertClose(out.get(0).asFloats(), expected.asFloats(), 1e-5f);
  }

  @Test
  void fixtureInputFollowsTheDocumentedFormula() {
    float[] input = ProjectModels.expectedInput("mlp").asFloats();
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 64; j++) {
        assertThat(input[i * 64 + j]).isEqualTo(((i * 64 + j) % 17 - 8) / 8.0f);
      }
    }
  }

  @Test
  void batchedRequestsGetExactlyTheirOwnRows() {
    int[] sizes = {1, 3, 1, 2, 1};
    List<InferenceRequest> batch = new ArrayList<>();
    List<Tensor> alone = new ArrayList<>();
    for (int i = 0; i < sizes.length; i++) {
      InferenceRequest r = ProjectModels.mlpRequest(sizes[i], i * 100);
      batch.add(r);
      alone.add(runner.infer(List.of(r)).get(0).get(0));
    }

    List<List<Tensor>> together = runner.infer(batch);

    assertThat(together).hasSize(sizes.length);
    for (int i = 0; i < sizes.length; i++) {
      Tensor out = together.get(i).get(0);
      assertThat(out.name()).isEqualTo("output");
      assertThat(out.shape()).containsExactly(sizes[i], 10);
      assertClose(out.asFloats(), alone.get(i).asFloats(), 1e-5f);
    }
    // The requests differ, so a row that landed in the wrong request would be caught above.
    assertThat(alone.get(0).asFloats()[0]).isNotCloseTo(alone.get(2).asFloats()[0], within(1e-3f));
  }

  @Test
  void requestedOutputsAreFilteredByName() {
    InferenceRequest wantsOutput = new InferenceRequest("a", ProjectModels.mlpRequest(2, 1).inputs(),
        List.of("output"), Map.of());

    List<Tensor> out = runner.infer(List.of(wantsOutput)).get(0);

    assertThat(out).extracting(Tensor::name).containsExactly("output");
    InferenceRequest wantsUnknown = new InferenceRequest("b", ProjectModels.mlpRequest(1, 1).inputs(),
        List.of("logits"), Map.of());
    assertThatThrownBy(() -> runner.infer(List.of(wantsUnknown)))
        .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
        .hasMessageContaining("unknown output 'logits'");
    assertThatThrownBy(() -> new RequestValidator("mlp", runner.spec().signature(), 0).validate(wantsUnknown))
        .isInstanceOf(InferenceException.class).hasMessageContaining("model 'mlp' has no output 'logits'");
  }

  @Test
  void badInputsAreInvalidAndLeaveTheRunnerUsable() {
    List<InferenceRequest> bad = List.of(
        InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 64}, new float[64])),
        InferenceRequest.of(new Tensor("input", DataType.FP64, new long[] {1, 64}, new byte[64 * 8])),
        InferenceRequest.of(Tensor.ofFloats("input", new long[] {1, 63}, new float[63])),
        InferenceRequest.of(Tensor.ofFloats("input", new long[] {64}, new float[64])));
    // (A request of 0 rows is refused by every pool before batching: PoolDispatcherLifecycleTest.)

    RequestValidator validator = new RequestValidator("mlp", runner.spec().signature(), 0);
    for (InferenceRequest r : bad) {
      assertThatThrownBy(() -> validator.validate(r))
          .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
          .hasMessageContaining("input '");
    }
    assertThatThrownBy(() -> runner.infer(List.of(ProjectModels.mlpRequest(1, 0), bad.get(0))))
        .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
        .hasMessageContaining("missing input 'input'");
    assertThat(runner.infer(List.of(ProjectModels.mlpRequest(1, 0))).get(0).get(0).shape()).containsExactly(1, 10);
  }

  @Test
  void loadInfoRecordsWarmUp() {
    ModelLoadInfo info = runner.loadInfo();

    assertThat(info.warmupBatchSizes()).containsExactly(1, 8);
    assertThat(info.warmupIterations()).as("each size repeated for the JIT, within the budget").isBetween(2, 2 * ModelRunners.WARMUP_MAX_ITERATIONS);
    assertThat(info.warmupTime()).isPositive();
    assertThat(info.loadTime()).isPositive();
    assertThat(info.device()).isEqualTo("cpu()");
    assertThat(info.engine()).isEqualTo(ModelSpec.ENGINE_PYTORCH);
    assertThat(info.engineVersion()).isEqualTo(ai.djl.pytorch.jni.LibUtils.getVersion()); // 2.7.1 unless -Pcuda124
    assertThat(info.format()).isEqualTo(ModelSpec.FORMAT_TORCHSCRIPT);
    assertThat(info.parameterCount()).hasValue(64 * 256 + 256 + 256 * 10 + 10);
  }

  @Test
  void emptyBatchRunsNothing() {
    assertThat(runner.infer(List.of())).isEmpty();
  }

  static void assertClose(float[] actual, float[] expected, float tolerance) {
    assertThat(actual).hasSameSizeAs(expected);
    for (int i = 0; i < actual.length; i++) {
      assertThat(actual[i]).as("element %d", i).isCloseTo(expected[i], within(tolerance));
    }
  }
}
