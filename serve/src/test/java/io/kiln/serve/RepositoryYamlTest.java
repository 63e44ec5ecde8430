package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.ModelRepository;
import io.kiln.pools.ModelSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A multiplexed deployment's {@code repository} section: a folder of model folders and/or a list of models. */
@Tag("slow")
class RepositoryYamlTest {

  private static final DeploymentLoader CHECKING = new DeploymentLoader();

  private static String deployment(String repository) {
    return """
        deployments:
          - name: zoo
            version: "1"
            repository:
        %s
            pool:
              workers_per_node: 2
        """.formatted(repository.indent(6).stripTrailing());
  }

  @Test
  void aFolderOfModelFoldersAndAListMakeOneRepositoryThatSurvivesTheStoredJson(@TempDir Path dir) throws Exception {
    for (String name : new String[] {"b", "a", "c"}) {
      Files.writeString(Files.createDirectories(dir.resolve("zoo").resolve(name)).resolve("model.onnx"), "");
    }
    Files.createDirectories(dir.resolve("zoo").resolve(".hidden"));
    DeploymentSpec spec = CHECKING.load(deployment("""
        path: %s
        models:
          - {name: echo, uri: "builtin:identity", engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}
        defaults:
          inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
          outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
        max_models_per_worker: 3
        max_concurrent_loads: 1
        """.formatted(dir.resolve("zoo"))), Specs.SOURCE).deployments().get(0);

    ModelRepository repo = spec.repository();
    assertThat(repo.names()).containsExactly("a", "b", "c", "echo");
    assertThat(repo.model("b").orElseThrow().engine()).isEqualTo(ModelSpec.ENGINE_ONNX);
    assertThat(repo.model("b").orElseThrow().uri()).isEqualTo(dir.resolve("zoo").resolve("b"));
    assertThat(repo.model("echo").orElseThrow().inputs().get(0).name()).as("its own inputs win").isEqualTo("x");
    assertThat(repo.maxModelsPerWorker()).isEqualTo(3);
    assertThat(repo.maxConcurrentLoads()).isEqualTo(1);
    assertThat(spec.model()).isEqualTo(repo.model("a").orElseThrow());
    assertThat(spec.poolOn("n1", 2).repository()).isEqualTo(repo);
    assertThat(SpecJson.fromJson(SpecJson.toJson(spec))).isEqualTo(spec);
  }

  @Test
  void problemsInARepositoryNameTheirLineAndColumn(@TempDir Path dir) {
    String yaml = deployment("""
        models:
          - {name: ok, uri: "builtin:identity", inputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}
          - {name: ok, uri: "builtin:identity", inputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}
          - {name: bad, uri: "builtin:identity", inputs: [{name: x, datatype: FP99, shape: [-1, 4]}]}
        max_models_per_worker: 0
        """);
    assertThatThrownBy(() -> CHECKING.load(yaml, Specs.SOURCE)).isInstanceOfSatisfying(
        DeploymentValidationException.class, e -> assertThat(e.problems()).extracting(Problem::line, Problem::message)
            .anySatisfy(p -> assertThat(p.toList()).containsExactly(7, "duplicate model 'ok' (also "
                + "deployments[0].repository.models[0])"))
            .anySatisfy(p -> assertThat((String) p.toList().get(1)).contains("unknown datatype 'FP99'"))
            .anySatisfy(p -> assertThat(p.toList().get(0)).isEqualTo(9)));
    assertThatThrownBy(() -> CHECKING.load(deployment("path: " + dir.resolve("missing")), Specs.SOURCE))
        .isInstanceOfSatisfying(DeploymentValidationException.class, e -> assertThat(e.problems()).singleElement()
            .satisfies(p -> {
              assertThat(p.line()).isEqualTo(5);
              assertThat(p.column()).isGreaterThan(1);
              assertThat(p.message()).contains("does not exist");
            }));
    assertThatThrownBy(() -> CHECKING.load("""
        deployments:
          - name: zoo
            version: "1"
            model: {uri: "builtin:identity", inputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}
            repository: {models: [{name: a, uri: "builtin:identity", inputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}]}
        """, Specs.SOURCE)).hasMessageContaining("either 'model'");
  }

  @Test
  void aMemoryCapReadsInMibSurvivesTheStoredJsonAndIsRefusedOverAnEngineThatCannotReportMemory(@TempDir Path dir)
      throws Exception {
    Files.writeString(Files.createDirectories(dir.resolve("onnx")).resolve("model.onnx"), "");
    DeploymentSpec spec = CHECKING.load(deployment("""
        models:
          - {name: a, uri: %s}
          - {name: echo, uri: "builtin:identity", engine: Builtin}
        defaults: {inputs: [{name: x, datatype: FP32, shape: [-1, 4]}], outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]}
        max_memory_mb: 0.5
        """.formatted(dir.resolve("onnx"))), Specs.SOURCE).deployments().get(0);
    assertThat(spec.repository().maxModelBytes()).isEqualTo(512 * 1024);
    assertThat(SpecJson.fromJson(SpecJson.toJson(spec))).isEqualTo(spec);
    assertThat(CHECKING.load(deployment("""
        models: [{name: echo, uri: "builtin:identity", engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 4]}], outputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}]
        """), Specs.SOURCE).deployments().get(0).repository().maxModelBytes()).as("no cap by default").isZero();

    Files.writeString(Files.createDirectories(dir.resolve("torch")).resolve("model.pt"), "");
    String torch = deployment("""
        models:
          - {name: t, uri: %s}
        defaults: {inputs: [{name: x, datatype: FP32, shape: [-1, 4]}], outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]}
        max_memory_mb: 256
        """.formatted(dir.resolve("torch")));
    assertThatThrownBy(() -> CHECKING.load(torch, Specs.SOURCE)).isInstanceOfSatisfying(
        DeploymentValidationException.class, e -> assertThat(e.problems()).singleElement().satisfies(p -> {
          assertThat(p.line()).isEqualTo(8);
          assertThat(p.column()).isGreaterThan(1);
          assertThat(p.message()).contains("model 't'", "engine PyTorch does not report", "max_memory_mb");
        }));
    for (String bad : new String[] {"0", "-1", "lots"}) {
      assertThatThrownBy(() -> CHECKING.load(deployment("""
          models: [{name: echo, uri: "builtin:identity", engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 4]}], outputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}]
          max_memory_mb: %s
          """.formatted(bad)), Specs.SOURCE)).as(bad).isInstanceOfSatisfying(DeploymentValidationException.class,
          e -> assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.line()).isEqualTo(6);
            assertThat(p.path()).endsWith("repository.max_memory_mb");
          }));
    }
  }
}
