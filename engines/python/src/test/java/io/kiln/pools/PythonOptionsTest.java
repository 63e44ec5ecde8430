package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link PythonOptions}' defaults and checks, and how a {@link ModelSpec} of engine Python carries them. */
class PythonOptionsTest {

  private static ModelSpec.Builder python() {
    return ModelSpec.builder().uri("models/py").engine("python").input("x", DataType.FP32, -1, 4)
        .output("y", DataType.FP32, -1, 4);
  }

  @Test
  void defaults() {
    assertThat(PythonOptions.DEFAULTS).isEqualTo(new PythonOptions(null, null, null, null, null, null));
    assertThat(PythonOptions.DEFAULTS).extracting("interpreter", "className", "config", "env", "startupTimeout",
        "requestTimeout").containsExactly("python3", "Model", Map.of(), Map.of(), Duration.ofMinutes(5),
        Duration.ofSeconds(30));
  }

  @Test
  void aPythonSpecGetsDefaultOptionsAndOtherEnginesTakeNone() {
    ModelSpec spec = python().build();
    assertThat(spec.engine()).isEqualTo(ModelSpec.ENGINE_PYTHON);
    assertThat(spec.python()).isEqualTo(PythonOptions.DEFAULTS);
    PythonOptions custom = PythonOptions.builder().className("Classifier").interpreter("/opt/venv").build();
    assertThat(spec.toBuilder().python(custom).build().toBuilder().build().python()).isEqualTo(custom);
    assertThat(ModelSpec.builder().uri("models/mlp").input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 4)
        .build().python()).isNull();
    assertThatThrownBy(() -> ModelSpec.builder().uri("models/mlp").input("x", DataType.FP32, -1, 4)
        .output("y", DataType.FP32, -1, 4).python(custom).build())
        .hasMessage("python: only for engine Python, this model's is PyTorch");
  }

  @Test
  void aPythonSpecNeedsOutputsAndTakesNoFormatOrArchitecture() {
    assertThatThrownBy(() -> python().outputs(List.of()).build())
        .hasMessage("outputs: a Python model needs at least one output");
    assertThatThrownBy(() -> python().format("torchscript").build()).hasMessageStartingWith("format: a Python model");
    assertThatThrownBy(() -> python().architecture("mlp").build()).hasMessageStartingWith("architecture: a Python model");
    assertThatThrownBy(() -> ModelSpec.builder().engine("Java")).hasMessageContaining("expected one of " + String.join(", ", ModelSpec.engines())).hasMessageContaining("Python");
  }

  @Test
  void badValuesAreRefusedNamingTheField() {
    assertThatThrownBy(() -> PythonOptions.builder().className("my-model").build())
        .hasMessage("python.class: 'my-model' is not a Python class name");
    assertThatThrownBy(() -> PythonOptions.builder().requestTimeout(Duration.ZERO))
        .hasMessageStartingWith("python.request_timeout: must be above 0");
    assertThatThrownBy(() -> PythonOptions.builder().startupTimeout(Duration.ofHours(2)))
        .hasMessageStartingWith("python.startup_timeout: must be above 0 and at most 60 minutes");
    assertThatThrownBy(() -> PythonOptions.builder().env(Map.of("CUDA_VISIBLE_DEVICES", "0")).build())
        .hasMessageStartingWith("python.env: CUDA_VISIBLE_DEVICES is set by Kiln");
    assertThatThrownBy(() -> PythonOptions.builder().env(Map.of("A=B", "x")).build())
        .hasMessage("python.env: 'A=B' is not an environment variable name");
    assertThatThrownBy(() -> PythonOptions.builder().config(Map.of("when", new Object())).build())
        .hasMessage("python.config.when: a Object is not a string, number, boolean, list or map");
    assertThatThrownBy(() -> PythonOptions.builder().config(Map.of("x", List.of(1, Double.NaN))).build())
        .hasMessage("python.config.x[1]: NaN has no JSON form");
  }

  @Test
  void configIsCopiedDeeply() {
    java.util.List<Object> list = new java.util.ArrayList<>(List.of(1, "a"));
    PythonOptions o = PythonOptions.builder().config(Map.of("list", list, "nested", Map.of("k", true))).build();
    list.add(2);
    assertThat(o.config()).isEqualTo(Map.of("list", List.of(1, "a"), "nested", Map.of("k", true)));
  }
}
