package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.testsupport.ProjectModels;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The DJL-built MLP in models/mlp-djl, loaded from its .params file into the 'mlp' architecture. */
@Tag("slow")
class DjlParamsModelTest {

  @Test
  void outputMatchesTheRecordedOne() {
    try (ModelRunner runner = ModelRunners.load(ProjectModels.mlpDjl().build(), List.of())) {
      List<Tensor> out = runner.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp-djl")))).get(0);

      assertThat(out.get(0).shape()).containsExactly(2, 10);
      TorchScriptModelTest.assertClose(out.get(0).asFloats(), ProjectModels.expectedOutput("mlp-djl").asFloats(), 1e-5f);
      assertThat(runner.loadInfo().format()).isEqualTo(ModelSpec.FORMAT_DJL_PARAMS);
      assertThat(runner.loadInfo().parameterCount()).hasValue(64 * 256 + 256 + 256 * 10 + 10);
    }
  }

  @Test
  void formatIsDetectedFromTheFolder() {
    ModelSpec spec = ProjectModels.mlpDjl().format(ModelSpec.FORMAT_AUTO).build();
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      assertThat(runner.loadInfo().format()).isEqualTo(ModelSpec.FORMAT_DJL_PARAMS);
    }
  }

  @Test
  void architectureIsRequired() {
    ModelSpec spec = ProjectModels.mlpDjl().format(ModelSpec.FORMAT_AUTO).architecture("").build();

    assertThatThrownBy(() -> ModelRunners.load(spec, List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("architecture");
  }

  @Test
  void weightsThatDoNotFitTheArchitectureFailTheLoad() {
    ModelSpec spec = ProjectModels.mlpDjl().architecture("mlp:256,256").build();

    assertThatThrownBy(() -> ModelRunners.load(spec, List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("mlp:256,256");
  }

  @Test
  void outputsThatContradictTheSpecFailTheWarmUp() {
    ModelSpec spec = ProjectModels.mlpDjl().outputs(List.of(new TensorSpec("output", DataType.FP64, new long[] {-1, 10})))
        .build();

    assertThatThrownBy(() -> ModelRunners.load(spec, List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("warm-up")
        .hasMessageContaining("FP64");
  }

  @Test
  void datatypesTheEngineCannotTakeAreRefusedBeforeLoading() {
    // Creating an INT16 or BF16 tensor aborts the JVM inside DJL 0.36's native code, so this must never get that far.
    ModelSpec spec = ProjectModels.mlp().inputs(List.of(new TensorSpec("input", DataType.INT16, new long[] {-1, 64})))
        .build();

    assertThatThrownBy(() -> ModelRunners.load(spec, List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("'input' is INT16, which the PyTorch engine does not support");
  }

  @Test
  void missingFolderIsAClearLoadError() {
    ModelSpec spec = ProjectModels.mlp().uri(ProjectModels.modelsDir().resolve("no-such-model")).build();

    assertThatThrownBy(() -> ModelRunners.load(spec, List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("no-such-model")
        .hasMessageContaining("does not exist");
  }
}
