package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class ModelSpecTest {

  private static ModelSpec.Builder valid() {
    return ModelSpec.builder().uri(Path.of("models/mlp"))
        .input("input", DataType.FP32, -1, 64)
        .output("output", DataType.FP32, -1, 10);
  }

  private static void rejects(UnaryOperator<ModelSpec.Builder> change, String message) {
    assertThatThrownBy(() -> change.apply(valid()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  @Test
  void defaults() {
    ModelSpec spec = valid().build();

    assertThat(spec.engine()).isEqualTo(ModelSpec.ENGINE_PYTORCH);
    assertThat(spec.format()).isEqualTo(ModelSpec.FORMAT_AUTO);
    assertThat(spec.architecture()).isEmpty();
    assertThat(spec.warmupBatchSizes()).isEqualTo(ModelSpec.DEFAULT_WARMUP_BATCH_SIZES);
    assertThat(spec.intraOpThreads()).isZero();
    assertThat(spec.interOpThreads()).isZero();
    assertThat(spec.toBuilder().build()).isEqualTo(spec);
  }

  @Test
  void namesAreCanonicalised() {
    ModelSpec spec = valid().engine("pytorch").format("DJL-Params").architecture(" MLP:128 ").build();

    assertThat(spec.engine()).isEqualTo("PyTorch");
    assertThat(spec.format()).isEqualTo("djl-params");
    assertThat(spec.architecture()).isEqualTo("MLP:128");
  }

  @Test
  void rejectsWhatCannotWork() {
    assertThatThrownBy(() -> ModelSpec.builder().input("x", DataType.FP32, -1).output("y", DataType.FP32, -1).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("uri: required");
    rejects(b -> b.engine("TensorFlow"), "engine: unknown engine 'TensorFlow'");
    rejects(b -> b.format("onnx"), "format: unknown format 'onnx'");
    rejects(b -> b.inputs(List.of()), "inputs: a model needs at least one input");
    rejects(b -> b.outputs(List.of()), "outputs: a PyTorch model needs at least one output");
    rejects(b -> b.input("input", DataType.FP32, -1, 3), "inputs: duplicate tensor name 'input'");
    rejects(b -> b.input("deep", DataType.FP32, new long[SpecRules.MAX_RANK + 1]), "'deep' has 33 dimensions");
    rejects(b -> b.warmupBatchSizes(0), "warmupBatchSizes: each must be in 1..4096, got 0");
    rejects(b -> b.intraOpThreads(-1), "intraOpThreads: must be in 0..1024");
    rejects(b -> b.interOpThreads(5000), "interOpThreads: must be in 0..1024");
    rejects(b -> b.format("djl-params"), "architecture: required for djl-params");
    rejects(b -> b.format("torchscript").architecture("mlp"), "architecture: a TorchScript file carries its own");
    rejects(b -> b.architecture("vgg16"), "architecture: unknown 'vgg16'");
    rejects(b -> b.architecture("mlp:0"), "widths in 'mlp:0' must be in 1..");
    rejects(b -> b.architecture("mlp:12,x"), "not a number: 'x'");
  }

  @Test
  void aScalarIsATensorOfRankZeroPassedWholeAsIsAFixedFirstDimension() {
    ModelSpec spec = valid().input("sr", DataType.INT64).input("state", DataType.FP32, 2, -1, 128).build();

    assertThat(spec.inputs()).extracting(TensorSpec::batched).containsExactly(true, false, false);
    assertThat(spec.inputs()).extracting(TensorSpec::scalar).containsExactly(false, true, false);
    assertThat(spec.inputs().get(1).shape()).isEmpty();
    assertThat(spec.inputs().get(1).accepts(new long[0])).isTrue();
    assertThat(spec.inputs().get(1).accepts(new long[] {1})).isFalse();
    assertThat(spec.toBuilder().build()).isEqualTo(spec);
  }

  @Test
  void builtinsAreChecked() {
    ModelSpec.Builder builtin = ModelSpec.builder().uri("builtin:identity").engine("Builtin").input("x", DataType.FP32, -1);

    assertThat(builtin.build().isBuiltin()).isTrue();
    assertThatThrownBy(() -> builtin.uri("builtin:nope").build()).hasMessageContaining("unknown built-in model 'builtin:nope'");
    assertThatThrownBy(() -> builtin.uri("builtin:identity").output("y", DataType.INT32, -1).build())
        .hasMessageContaining("'y' must have the datatype of input 'x' (FP32)");
    assertThatThrownBy(() -> builtin.outputs(List.of()).format("torchscript").build())
        .hasMessageContaining("format: built-in models have no file format");
  }

  @Test
  void isImmutable() {
    List<TensorSpec> inputs = new java.util.ArrayList<>(List.of(new TensorSpec("a", DataType.FP32, new long[] {-1})));
    ModelSpec spec = valid().inputs(inputs).build();
    inputs.clear();

    assertThat(spec.inputs()).hasSize(1);
    assertThatThrownBy(() -> spec.warmupBatchSizes().add(3)).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void bytesIsAValidDatatypeButThePyTorchEngineRefusesItAtLoad() {
    ModelSpec text = ModelSpec.builder().uri(java.nio.file.Path.of("models/mlp")).input("text", DataType.BYTES, -1)
        .output("y", DataType.FP32, -1).build();
    assertThat(text.inputs().get(0).datatype()).isEqualTo(DataType.BYTES);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> ModelRunners.load(text, java.util.List.of()))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("tensor 'text' is BYTES, which the PyTorch engine"
            + " does not support");
  }

  @Test
  void theBuiltinIdentityPassesBytesThrough() {
    ModelSpec id = ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
        .input("text", DataType.BYTES, -1).build();
    Tensor in = new Tensor("text", DataType.BYTES, new long[] {2},
        io.kiln.pools.spi.ByteElements.joinStrings(new String[] {"ab", "\u00e9"}));
    try (ModelRunner r = ModelRunners.load(id, java.util.List.of())) {
      assertThat(r.infer(java.util.List.of(InferenceRequest.of(in), InferenceRequest.of(in))))
          .allSatisfy(out -> assertThat(out).containsExactly(in));
    }
  }
}
