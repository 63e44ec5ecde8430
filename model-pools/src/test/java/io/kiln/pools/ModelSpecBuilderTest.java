package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.spec.ModelField;
import io.kiln.pools.spec.ModelFields;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What {@link ModelSpec.Builder} checks before {@link ModelSpec.Builder#build()}: the generic setter takes a value of
 * its field's type only, and the typed setters reject a wrong value at once. Building needs the engines, so the
 * round trip of every field through the builder is in deploy's {@code ModelFieldsRoundTripTest}.
 */
class ModelSpecBuilderTest {

  @Test
  void setRefusesAValueOfAnotherTypeNamingTheField() {
    ModelSpec.Builder b = ModelSpec.builder();

    assertThatThrownBy(() -> b.set(ModelFields.URI, "models/mlp")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("uri: expected Path, got String");
    assertThatThrownBy(() -> b.set(ModelFields.INTRA_OP_THREADS, 2L)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("intraOpThreads: expected int, got Long");
    assertThatThrownBy(() -> b.set(ModelFields.STREAMING, "true")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("streaming: expected boolean, got String");
    assertThatThrownBy(() -> b.set(ModelFields.PYTHON, Map.of("class", "Model")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("python: expected PythonOptions, got ");
  }

  @Test
  void setChecksTheItemsOfListsAndMaps() {
    ModelSpec.Builder b = ModelSpec.builder();

    assertThatThrownBy(() -> b.set(ModelFields.INPUTS, List.of("x"))).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("inputs: expected List<TensorSpec>, got a String in it");
    assertThatThrownBy(() -> b.set(ModelFields.WARMUP_BATCH_SIZES, List.of(1, 2L)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("warmupBatchSizes: expected List<Integer>, got a Long in it");
    assertThatThrownBy(() -> b.set(ModelFields.OPTIONS, Map.of("block_size", 16)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("options: expected Map<String, String>, got a Integer in it");
  }

  @Test
  void setTakesEveryFieldsDefaultAndNull() {
    ModelSpec.Builder b = ModelSpec.builder();

    for (ModelField f : ModelFields.ALL) {
      assertThat(b.set(f, f.defaultValue())).as(f.component()).isSameAs(b);
      assertThat(ModelFields.typeProblem(f, null)).as(f.component()).isNull();
    }
    assertThat(ModelFields.typeProblem(ModelFields.URI, Path.of("models/mlp"))).isNull();
    assertThat(ModelFields.typeProblem(ModelFields.PYTHON, PythonOptions.DEFAULTS)).isNull();
  }

  @Test
  void theTypedSettersRejectAWrongValueAtOnce() {
    ModelSpec.Builder b = ModelSpec.builder();

    assertThatThrownBy(() -> b.engine("TensorFlow")).hasMessageStartingWith("engine: unknown engine 'TensorFlow'");
    assertThatThrownBy(() -> b.engine(" ")).hasMessageStartingWith("engine: required, one of ");
    assertThatThrownBy(() -> b.format("onnx")).hasMessage("format: unknown format 'onnx', expected torchscript,"
        + " djl-params or auto");
    assertThatThrownBy(() -> b.intraOpThreads(-1)).hasMessage("intraOpThreads: must be in 0..1024 (0 = engine"
        + " default), got -1");
    assertThatThrownBy(() -> b.interOpThreads(1025)).hasMessageStartingWith("interOpThreads: must be in 0..1024");
    assertThatThrownBy(() -> b.uri(" ")).isInstanceOf(IllegalArgumentException.class).hasMessage("uri: required");
    assertThatThrownBy(() -> b.uri((String) null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("uri: required");
    assertThatThrownBy(() -> b.uri((Path) null)).isInstanceOf(NullPointerException.class).hasMessage("uri");
  }

  @Test
  void aBuilderWithoutAUriDoesNotBuild() {
    assertThatThrownBy(() -> ModelSpec.builder().input("x", DataType.FP32, -1).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessage("uri: required");
  }
}
