package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.ModelSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A model section without {@code engine}: the folder tells, or the problem says what it would need. */
class EngineDetectionTest {

  private static final DeploymentLoader CHECKING = new DeploymentLoader();

  private static String model(Path uri) {
    return """
        deployments:
          - name: m
            version: "1"
            model:
              uri: %s
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
            pool:
              workers_per_node: 1
        """.formatted(uri);
  }

  private static String engineOf(Path uri) {
    return CHECKING.load(model(uri), Specs.SOURCE).deployments().get(0).model().engine();
  }

  @Test
  void theOnnxExampleLeavesItsEngineToTheFolder() {
    DeploymentSpec spec = CHECKING.load(Path.of("..", "deploy", "examples", "onnx", "mlp.yaml")).deployments().get(0);
    assertThat(spec.model().engine()).isEqualTo(ModelSpec.ENGINE_ONNX);
    assertThat(spec.model().uri()).isEqualTo(Path.of("..", "models", "mlp-onnx").toAbsolutePath().normalize());
    assertThat(SpecJson.fromJson(SpecJson.toJson(spec))).isEqualTo(spec);
  }

  @Test
  void eachKindOfModelFolderShowsItsEngine(@TempDir Path dir) throws Exception {
    Path onnx = Files.createDirectories(dir.resolve("onnx"));
    Files.writeString(onnx.resolve("model.onnx"), "");
    Files.writeString(onnx.resolve("generate.py"), "");
    Path python = Files.createDirectories(dir.resolve("python"));
    Files.writeString(python.resolve("model.py"), "class Model:\n    pass\n");
    Path torch = Files.createDirectories(dir.resolve("torch"));
    Files.writeString(torch.resolve("mlp.pt"), "");
    Path djl = Files.createDirectories(dir.resolve("djl"));
    Files.writeString(djl.resolve("mlp-0000.params"), "");

    assertThat(engineOf(onnx)).isEqualTo(ModelSpec.ENGINE_ONNX);
    assertThat(engineOf(onnx.resolve("model.onnx"))).isEqualTo(ModelSpec.ENGINE_ONNX);
    assertThat(engineOf(python)).isEqualTo(ModelSpec.ENGINE_PYTHON);
    assertThat(engineOf(torch)).isEqualTo(ModelSpec.ENGINE_PYTORCH);
    assertThat(engineOf(djl)).isEqualTo(ModelSpec.ENGINE_PYTORCH);
  }

  @Test
  void aFolderThatShowsNoneOrSeveralNeedsTheEngineWritten(@TempDir Path dir) throws Exception {
    Path both = Files.createDirectories(dir.resolve("both"));
    Files.writeString(both.resolve("model.onnx"), "");
    Files.writeString(both.resolve("model.py"), "");
    Path empty = Files.createDirectories(dir.resolve("empty"));

    for (Path p : new Path[] {both, empty}) {
      assertThat(Specs.problems(CHECKING, model(p))).singleElement().satisfies(problem -> {
        assertThat(problem.path()).isEqualTo("deployments[0].model.engine");
        assertThat(problem.message()).startsWith("missing required field 'engine'")
            .contains("model.onnx (OnnxRuntime)", "model.py (Python)", ".pt / NAME-NNNN.params file (PyTorch)");
      });
    }
  }
}
