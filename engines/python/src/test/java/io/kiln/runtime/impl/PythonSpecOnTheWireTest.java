package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.runtime.WireCodec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A Python model's spec crosses nodes with its options (the worker that loads it may be remote). */
class PythonSpecOnTheWireTest {

  @Test
  void aPythonSpecRoundTripsWithItsOptions() throws Exception {
    PythonOptions options = PythonOptions.builder().interpreter("/opt/venv").className("Classifier")
        .config(Map.of("threshold", 0.5, "labels", List.of("cat", "dog"), "deep", Map.of("on", true)))
        .env(Map.of("HF_HOME", "/cache")).startupTimeout(Duration.ofSeconds(90)).requestTimeout(Duration.ofMillis(2500))
        .build();
    ModelSpec spec = ModelSpec.builder().uri("models/py").engine(ModelSpec.ENGINE_PYTHON)
        .input("x", DataType.FP32, -1, 4).output("y", DataType.INT64, -1).python(options).build();
    for (var mapper : List.of(WireCodec.cbor(), WireCodec.json())) {
      assertThat(mapper.readValue(mapper.writeValueAsBytes(spec), ModelSpec.class)).isEqualTo(spec);
    }
    ModelSpec plain = ModelSpec.builder().uri("models/mlp").input("x", DataType.FP32, -1, 4)
        .output("y", DataType.FP32, -1, 4).build();
    assertThat(WireCodec.json().readValue(WireCodec.json().writeValueAsBytes(plain), ModelSpec.class).python()).isNull();
    // A GPU worker's permission to run on the CPU travels too: the worker that loads the model decides with it.
    ModelSpec fallback = plain.toBuilder().allowCpuFallback(true).build();
    for (var mapper : List.of(WireCodec.cbor(), WireCodec.json())) {
      assertThat(mapper.readValue(mapper.writeValueAsBytes(fallback), ModelSpec.class).allowCpuFallback()).isTrue();
    }
  }
}
