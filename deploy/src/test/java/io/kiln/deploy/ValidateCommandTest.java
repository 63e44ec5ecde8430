package io.kiln.deploy;

import static io.kiln.deploy.KilnCliTest.kiln;
import static io.kiln.deploy.KilnCliTest.repositoryRoot;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kiln validate}: the apply's checks with no node (nothing listens; no address is given). */
@Tag("slow")
class ValidateCommandTest {

  /** The deployment files of deploy/examples whose models are in the repository (resnet's is built by a script). */
  static final List<String> VALID = List.of("quickstart.yaml", "bench/noop.yaml", "bench/tiny.yaml",
      "bench/tiny-cluster.yaml", "onnx/mlp.yaml", "python/mlp.yaml", "streaming/streaming.yaml",
      "pipeline/media.yaml");

  @Test
  void theInvalidExampleListsEveryProblemWithLineAndColumnAndExitsOne() {
    Path file = repositoryRoot().resolve("deploy/examples/invalid.yaml");
    KilnCliTest.Run r = kiln("validate", file.toString());
    assertThat(r.code()).isEqualTo(1);
    List<String> lines = r.errLines();
    assertThat(lines.get(0)).matches(Pattern.quote(file.toString()) + " is invalid: \\d+ problem\\(s\\):");
    assertThat(lines.subList(1, lines.size())).hasSizeGreaterThanOrEqualTo(8)
        .allSatisfy(l -> assertThat(l).matches("  " + Pattern.quote(file.toString()) + ":\\d+:\\d+: .+"));
    assertThat(lines.get(0)).contains((lines.size() - 1) + " problem(s)");
    assertThat(r.err()).contains(file + ":3:").contains("deployments[0].name").contains("FP23")
        .contains("workers_per_nod").contains("max_batch_size").contains("min_workers");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void everyValidExampleIsValidWithASummaryAndWhatWasNotChecked() {
    for (String name : VALID) {
      Path file = repositoryRoot().resolve("deploy/examples").resolve(name);
      KilnCliTest.Run r = kiln("validate", file.toString());
      assertThat(r.code()).as(name + ": " + r.err()).isZero();
      assertThat(r.out().lines().toList()).as(name).hasSize(2);
      assertThat(r.out()).as(name).startsWith(file + " is valid: ").contains("deployment(s), ")
          .contains("not checked offline: placement on nodes");
    }
    assertThat(kiln("validate", repositoryRoot().resolve("deploy/examples/pipeline/media.yaml").toString()).out())
        .contains("1 deployment(s), 1 pipeline(s)");
  }

  @Test
  void pipelineProblemsAreReportedAndClusterDeploymentsCanBeDeclared(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("p.yaml"), """
        deployments:
          - name: here
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1}
        pipelines:
          - name: only
            steps:
              - name: fetch
                fetch: "${input.media_uri}"
              - name: analyse
                infer: {deployment: elsewhere}
        """);
    KilnCliTest.Run unknown = kiln("validate", file.toString());
    assertThat(unknown.code()).isEqualTo(1);
    assertThat(unknown.errLines()).hasSize(2);
    assertThat(unknown.err()).contains(file + ":16:").contains("elsewhere");

    KilnCliTest.Run declared = kiln("validate", file.toString(), "--known", "elsewhere");
    assertThat(declared.code()).as(declared.err()).isZero();
    assertThat(declared.out()).contains("1 deployment(s), 1 pipeline(s)");
  }

  @Test
  void badYamlNamesLineAndColumnAndAMissingFileIsOneLine(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("bad.yaml"), "deployments:\n  - name: [unclosed\n");
    KilnCliTest.Run r = kiln("validate", file.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.errLines().get(1)).matches("  " + Pattern.quote(file.toString()) + ":\\d+:\\d+: .+");

    assertThat(kiln("validate", "no/such.yaml").errLines()).singleElement().asString()
        .isEqualTo("kiln: no such file: no/such.yaml");
  }
}
