package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Path;
import java.util.List;

/** Loading helpers for tests: YAML text in, specs or problems out. */
final class Specs {

  static final Path SOURCE = Path.of("app.yaml");
  /** Without model-folder checks, so tests need no files unless they test exactly that. */
  static final DeploymentLoader LOADER =
      new DeploymentLoader(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false));

  /** A minimal valid deployment with a builtin model; tests append or change lines. */
  static final String MINIMAL = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
          pool:
            workers_per_node: 2
      """;

  private Specs() {
  }

  static DeploymentSpec single(String yaml) {
    List<DeploymentSpec> specs = LOADER.load(yaml, SOURCE).deployments();
    assertThat(specs).hasSize(1);
    return specs.get(0);
  }

  static List<Problem> problems(String yaml) {
    return problems(LOADER, yaml);
  }

  static List<Problem> problems(DeploymentLoader loader, String yaml) {
    DeploymentValidationException e =
        catchThrowableOfType(DeploymentValidationException.class, () -> loader.load(yaml, SOURCE));
    assertThat(e).as("expected validation problems").isNotNull();
    return e.problems();
  }

  /** Asserts that {@code yaml} has exactly one problem, at line:column, on path, with a message containing text. */
  static Problem onlyProblem(String yaml, int line, int column, String path, String message) {
    List<Problem> problems = problems(yaml);
    assertThat(problems).as("problems of:\n" + yaml).hasSize(1);
    Problem p = problems.get(0);
    assertThat(p.line()).as("line of " + p).isEqualTo(line);
    assertThat(p.column()).as("column of " + p).isEqualTo(column);
    assertThat(p.path()).as("path of " + p).isEqualTo(path);
    assertThat(p.message()).as("message of " + p).contains(message);
    assertThat(p.file()).isEqualTo(SOURCE.toString());
    return p;
  }

  /** {@link #MINIMAL} with the pool section replaced by {@code poolAndMore} (indented by 4). */
  static String withPool(String poolAndMore) {
    return MINIMAL.substring(0, MINIMAL.indexOf("    pool:")) + poolAndMore;
  }
}
