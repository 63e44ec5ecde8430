package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A model's {@code python:} section: read, checked (model.py and its class, without Python), stored. */
class PythonModelSpecTest {

  private static final Path EXAMPLE = Path.of("..", "deploy", "examples", "python", "mlp.yaml");

  private static String python(String uri, String section) {
    return """
        deployments:
          - name: py
            version: "1"
            model:
              uri: %s
              engine: Python
        %s
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool:
              workers_per_node: 1
        """.formatted(uri, section);
  }

  @Test
  void theExampleLoadsWithItsSettingsAndRoundTripsThroughTheStoredJson() {
    DeploymentSpec spec = new DeploymentLoader().load(EXAMPLE).deployments().get(0);

    assertThat(spec.model().engine()).isEqualTo(ModelSpec.ENGINE_PYTHON);
    PythonOptions py = spec.model().python();
    assertThat(py.className()).isEqualTo("Model");
    assertThat(py.interpreter()).isEqualTo("python3");
    assertThat(py.config()).isEqualTo(Map.of("weights", "mlp.npz"));
    assertThat(py.startupTimeout()).isEqualTo(Duration.ofMinutes(5));
    assertThat(py.requestTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(SpecJson.fromJson(SpecJson.toJson(spec))).isEqualTo(spec);
  }

  @Test
  void settingsOfEveryKindAreRead() {
    DeploymentSpec spec = Specs.single(python("models/py", String.join("\n",
        "      python:",
        "        class: Classifier",
        "        interpreter: /opt/venv",
        "        config: {threshold: 0.5, top_k: 3, labels: [cat, dog], deep: {on: true, none: null}}",
        "        env: {HF_HOME: /cache}",
        "        request_timeout_ms: 2500")));

    PythonOptions py = spec.model().python();
    assertThat(py.className()).isEqualTo("Classifier");
    assertThat(py.interpreter()).isEqualTo("/opt/venv");
    assertThat(py.config()).containsEntry("threshold", 0.5).containsEntry("top_k", 3L)
        .containsEntry("labels", List.of("cat", "dog"));
    assertThat(py.config().get("deep")).isEqualTo(new java.util.HashMap<>(java.util.Collections.singletonMap("none", null)) {{ put("on", true); }});
    assertThat(py.env()).isEqualTo(Map.of("HF_HOME", "/cache"));
    assertThat(py.requestTimeout()).isEqualTo(Duration.ofMillis(2500));
    assertThat(py.startupTimeout()).isEqualTo(PythonOptions.DEFAULT_STARTUP_TIMEOUT);
    assertThat(SpecJson.fromJson(SpecJson.toJson(spec))).isEqualTo(spec);
    // Without a section: the defaults.
    assertThat(Specs.single(python("models/py", "")).model().python()).isEqualTo(PythonOptions.DEFAULTS);
  }

  @Test
  void badSettingsAreReportedWithTheirPositions() {
    Specs.onlyProblem(python("models/py", "      python: {class: my-model}"), 7, 15, "deployments[0].model.python", "python.class: 'my-model' is not a Python class name");
    Specs.onlyProblem(python("models/py", "      python: {request_timeout_ms: 0}"), 7, 36, "deployments[0].model.python.request_timeout_ms", "must be greater than 0");
    Specs.onlyProblem(python("models/py", "      python: {clas: Model}"), 7, 16, "deployments[0].model.python.clas", "did you mean 'class'?");
    Specs.onlyProblem(python("models/py", "      python: {config: [1, 2]}"), 7, 24, "deployments[0].model.python.config", "must be a mapping of settings");
    Specs.onlyProblem("""
        deployments:
          - name: py
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              python: {class: Model}
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool:
              workers_per_node: 1
        """, 7, 7, "deployments[0].model.python", "only for engine Python, this model's is Builtin");
  }

  @Test
  void theModelFileAndItsClassAreCheckedWithoutStartingPython(@TempDir Path dir) throws Exception {
    DeploymentLoader checking = new DeploymentLoader();
    Path folder = Files.createDirectories(dir.resolve("m"));
    String yaml = python(folder.toString(), "      python: {class: Scorer}");

    assertThat(Specs.problems(checking, yaml)).singleElement().satisfies(p -> {
      assertThat(p.path()).isEqualTo("deployments[0].model.uri");
      assertThat(p.message()).contains("has no model.py");
    });
    Files.writeString(folder.resolve("model.py"), "import numpy\n\nclass Other:\n    pass\n# class Scorer: in a comment\n");
    assertThat(Specs.problems(checking, yaml)).singleElement().extracting(Problem::message).asString()
        .contains("defines no top-level class Scorer");
    Files.writeString(folder.resolve("model.py"), "import numpy\n\nclass Scorer(object):\n    def predict(self, x):\n        return x\n");
    assertThat(checking.load(yaml, Specs.SOURCE).deployments().get(0).model().python().className()).isEqualTo("Scorer");
    assertThat(Specs.problems(checking, python(dir.resolve("missing").toString(), ""))).singleElement()
        .extracting(Problem::message).asString().contains("does not exist");
  }
}
