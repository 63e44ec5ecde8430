package io.kiln.engines.python.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.PythonTests;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm-up samples of a Python model ({@code faulty/model.py}): a sample whose {@code predict} raises is a warm-up
 * problem and the model serves, since its process goes on; a sample that kills the process fails the load, as any
 * warm-up did before, since the runner cannot go on.
 */
@Tag("slow")
class PythonWarmupTest {

  /** A copy of the faulty model with {@code warmup/NAME.json} holding one row of four {@code value}s, per entry. */
  private static ModelSpec withSamples(Path dir, Map<String, Integer> samples) throws IOException {
    Path model = Files.createDirectories(dir.resolve("faulty").resolve("warmup")).getParent();
    Files.copy(PythonTests.testModel("faulty").resolve("model.py"), model.resolve("model.py"));
    for (Map.Entry<String, Integer> s : samples.entrySet()) {
      int v = s.getValue();
      Files.writeString(model.resolve("warmup").resolve(s.getKey() + ".json"), "{\"inputs\": [{\"name\": \"x\","
          + " \"datatype\": \"FP32\", \"shape\": [1, 4], \"data\": [[" + v + ", " + v + ", " + v + ", " + v + "]]}]}");
    }
    return PythonTests.faulty(Map.of()).uri(model).build();
  }

  @Test
  void aSampleWhosePredictRaisesIsAProblemAndTheModelServes(@TempDir Path dir) throws IOException {
    try (ModelRunner runner = ModelRunners.load(withSamples(dir, Map.of("a-ok", 1, "b-unlucky", 13)), List.of())) {
      assertThat(runner.loadInfo().warmupSamples()).containsExactly("warmup/a-ok.json", "warmup/b-unlucky.json");
      assertThat(runner.loadInfo().warmupProblems()).singleElement().asString()
          .startsWith("warm-up batch of 1 request of warmup/b-unlucky.json (x FP32[1, 4]) was rejected: ")
          .contains("ValueError", "unlucky 13");

      List<Tensor> out = runner.infer(List.of(InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4},
          new float[] {1, 2, 3, 4})))).get(0);

      assertThat(out.get(0).asFloats()).containsExactly(2, 4, 6, 8);
    }
  }

  @Test
  void aSampleThatKillsTheProcessFailsTheLoadNamingIt(@TempDir Path dir) throws IOException {
    ModelSpec spec = withSamples(dir, Map.of("exits", 66));

    assertThatThrownBy(() -> ModelRunners.load(spec, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("failed its warm-up on warm-up batch of 1 request of warmup/exits.json (x FP32[1, 4])"
            + " and cannot go on")
        .hasMessageContaining("exit code 3");
  }
}
