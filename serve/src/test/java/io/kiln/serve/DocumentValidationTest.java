package io.kiln.serve;

import static io.kiln.serve.Specs.onlyProblem;
import static io.kiln.serve.Specs.problems;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.serve.yaml.Reading;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Problems of the document as a whole: syntax, shape of the top level, size and expansion limits. */
@Tag("slow")
class DocumentValidationTest {

  @Test
  void syntaxErrorCarriesTheParsersPosition() {
    String yaml = """
        deployments:
          - name: mlp
             version: "1"
        """;
    // The indented line continues the plain scalar "mlp", so its ':' is where parsing fails.
    onlyProblem(yaml, 3, 13, "", "YAML syntax error: mapping values are not allowed here");
  }

  @Test
  void unclosedFlowSequenceIsASyntaxError() {
    String yaml = """
        deployments:
          - name: mlp
            version: "1"
            model: {uri: builtin:identity, inputs: [
        """;
    Problem p = problems(yaml).get(0);
    assertThat(p.message()).startsWith("YAML syntax error: ");
    assertThat(p.line()).isEqualTo(5);
  }

  @Test
  void secondDocumentIsRefused() {
    onlyProblem("deployments: []\n---\ndeployments: []\n", 2, 1, "", "but found another document");
  }

  @Test
  void emptyDocument() {
    onlyProblem("", 1, 1, "", "the document is empty");
    onlyProblem("# nothing but a comment\n", 1, 1, "", "the document is empty");
  }

  @Test
  void topLevelMustBeAMapping() {
    onlyProblem("- name: mlp\n- name: other\n", 1, 1, "",
        "the top level must be a mapping with a 'deployments' list, got a list");
    onlyProblem("just text\n", 1, 1, "", "got a string 'just text'");
  }

  @Test
  void missingDeploymentsWithSuggestion() {
    List<Problem> problems = problems("""
        deployment:
          - name: mlp
        """);
    assertThat(problems).extracting(Problem::toString).containsExactly(
        "app.yaml:1:1: deployments: missing required field 'deployments'",
        "app.yaml:1:1: deployment: unknown field 'deployment'; did you mean 'deployments'?");
  }

  @Test
  void deploymentsMustBeANonEmptyList() {
    onlyProblem("deployments: {name: mlp}\n", 1, 14, "deployments", "expected a list, got a mapping");
    onlyProblem("deployments: []\n", 1, 14, "deployments", "declare at least one deployment");
    onlyProblem("deployments:\n", 1, 13, "deployments", "'deployments' needs a value");
  }

  @Test
  void duplicateKeyNamesBothLines() {
    String yaml = Specs.MINIMAL.replace("    version: \"1\"\n", "    version: \"1\"\n    version: \"2\"\n");
    onlyProblem(yaml, 4, 5, "deployments[0].version", "duplicate key 'version' (first at line 3)");
  }

  @Test
  void fileOverTheSizeLimitIsRefusedBeforeParsing() {
    String big = "# " + "x".repeat((int) DeploymentLoader.DEFAULT_MAX_BYTES) + "\n";
    onlyProblem(big, 1, 1, "", "the file is 1048579 bytes; the limit is 1048576 bytes");
  }

  @Test
  void sizeLimitCountsUtf8BytesAndAppliesToFiles(@TempDir Path dir) throws Exception {
    var loader = new DeploymentLoader(new DeploymentLoader.Options(100, false));
    String text = "# " + "é".repeat(50) + "\n"; // 52 characters, 103 bytes
    List<Problem> problems = problems(loader, text);
    assertThat(problems).extracting(Problem::message)
        .containsExactly("the file is 103 bytes; the limit is 100 bytes");

    Path file = dir.resolve("big.yaml");
    Files.writeString(file, text);
    var e = org.assertj.core.api.Assertions.catchThrowableOfType(DeploymentValidationException.class,
        () -> loader.load(file));
    assertThat(e.getMessage()).isEqualTo(file + ":1:1: the file is 103 bytes; the limit is 100 bytes");
  }

  @Test
  void unreadableAndNonUtf8Files(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("missing.yaml");
    var e = org.assertj.core.api.Assertions.catchThrowableOfType(DeploymentValidationException.class,
        () -> Specs.LOADER.load(missing));
    assertThat(e.problems()).singleElement().satisfies(p -> {
      assertThat(p.file()).isEqualTo(missing.toString());
      assertThat(p.message()).startsWith("cannot read the file: NoSuchFile");
    });

    Path latin1 = dir.resolve("latin1.yaml");
    Files.write(latin1, new byte[] {'#', ' ', (byte) 0xE9, '\n'});
    e = org.assertj.core.api.Assertions.catchThrowableOfType(DeploymentValidationException.class,
        () -> Specs.LOADER.load(latin1));
    assertThat(e.problems()).extracting(Problem::message).containsExactly("the file is not valid UTF-8");
  }

  @Test
  void tooDeepNestingIsRefusedWhereItGoesTooDeep() {
    // The root mapping is level 1, so the 32nd '[' (column 14 + 31) is level 33.
    String yaml = "deployments: " + "[".repeat(40) + "]".repeat(40) + "\n";
    onlyProblem(yaml, 1, 45, "", "the document nests deeper than 32 levels");
  }

  @Test
  void billionLaughsIsRefusedAtTheFirstAliasOverTheCap() {
    String yaml = """
        x-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
        x-b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
        x-c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
        x-d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
        deployments: [*d]
        """;
    // Nine aliases on line 2, so the 17th is the 8th on line 3: column 10 + 7 * 4.
    onlyProblem(yaml, 3, 38, "", "more than 16 aliases to mappings or lists; refusing it as a possible alias bomb");
  }

  @Test
  void recursiveAliasesEndInATypeProblemNotALoop() {
    // An aliased node is positioned where it is defined, at its anchor.
    onlyProblem("deployments: &d [*d]\n", 1, 14, "deployments[0]", "expected a mapping, got a list");
    String yaml = Specs.MINIMAL.replace("workers_per_node: 2", "workers_per_node: 2\n      node_selector: &n {a: *n}");
    onlyProblem(yaml, 11, 22, "deployments[0].pool.node_selector.a", "expected a string, got a mapping");
  }

  @Test
  void expansionThroughFewAliasesIsBounded() {
    StringBuilder labels = new StringBuilder();
    for (int i = 0; i < 20_000; i++) {
      labels.append(i == 0 ? "" : ", ").append('k').append(i).append(": v");
    }
    String yaml = """
        deployments:
          - &d
            name: mlp
            version: "1"
            model: {uri: builtin:identity, engine: Builtin, inputs: [{name: i, datatype: FP32, shape: [1]}],
                    outputs: [{name: o, datatype: FP32, shape: [1]}]}
            pool:
              workers_per_node: 1
              node_selector: {%s}
        """.formatted(labels) + "  - *d\n".repeat(9);
    // 20,000 labels, read once per deployment: ten times, far beyond the budget, through only nine aliases.
    assertThat(yaml.length()).isLessThan(300_000);
    List<Problem> problems = problems(yaml);
    assertThat(problems).extracting(Problem::message)
        .contains("the document expands to more than " + Reading.MAX_VALUES
            + " values (through aliases?); refusing to read further");
  }

  @Test
  void extensionFieldsHoldAnchorsAndMergeKeysApply() {
    String yaml = """
        x-pool: &pool
          workers_per_node: 2
          worker_resources: {CPU: 0.5}
        deployments:
          - name: a
            version: "1"
            model: &model
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: *pool
          - name: b
            version: "1"
            model: *model
            pool:
              <<: *pool
              workers_per_node: 3
        """;
    var specs = Specs.LOADER.load(yaml, Specs.SOURCE).deployments();
    assertThat(specs).extracting(DeploymentSpec::id).containsExactly("a@1", "b@1");
    assertThat(specs.get(0).pool().workers()).isEqualTo(new PoolPlacement.PerNode(2));
    assertThat(specs.get(1).pool().workers()).isEqualTo(new PoolPlacement.PerNode(3));
    assertThat(specs.get(1).pool().workerResources()).isEqualTo(io.kiln.runtime.Resources.cpu(0.5));
  }

  @Test
  void problemsAreCappedSoAHugeBrokenFileStaysCheap() {
    StringBuilder yaml = new StringBuilder("deployments:\n");
    for (int i = 0; i < 300; i++) {
      yaml.append("  - nme").append(": x\n");
    }
    List<Problem> problems = problems(yaml.toString());
    assertThat(problems).hasSize(101);
    assertThat(problems).extracting(Problem::message).contains("too many problems; stopped after 100");
  }
}
