package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.testsupport.EchoEngineJar;
import io.kiln.testkit.KilnProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real launcher, {@code ./kiln} at the repository root, running the packaged {@code deploy/target/kiln.jar}
 * (Failsafe runs after {@code package}, so the jar is this build's and the script does not rebuild it): help of a
 * subcommand, the bash completion script, and a third-party engine's jar added through {@code KILN_CLASSPATH}, as a
 * user runs them.
 */
class KilnLauncherIT {

  record Result(int code, String output) {
  }

  static Result run(Path dir, List<String> command) throws Exception {
    KilnProcess.Result r = KilnProcess.command(command).directory(KilnCliTest.repositoryRoot())
        .log(Files.createTempFile(dir, "launcher", ".out")).run(Duration.ofSeconds(120));
    return new Result(r.code(), r.output());
  }

  @Test
  void upHelpThroughTheLauncherExitsZeroAndListsTheOptions(@TempDir Path dir) throws Exception {
    Result r = run(dir, List.of("./kiln", "up", "--help"));
    assertThat(r.code()).as(r.output()).isZero();
    assertThat(r.output()).contains("Usage: kiln up").contains("--file").contains("--ready-timeout")
        .contains("--help").doesNotContain("Unknown option").doesNotContain("building the distribution");
  }

  @Test
  void theCompletionScriptSourcesInBashAndCompletesKiln(@TempDir Path dir) throws Exception {
    Result r = run(dir, List.of("bash", "-c", "source <(./kiln completion) && complete -p kiln"));
    assertThat(r.code()).as(r.output()).isZero();
    assertThat(r.output()).contains("complete").contains(" kiln");
  }

  @Test
  void kilnClasspathPutsAThirdPartyEnginesJarOnTheLaunchersClassPath(@TempDir Path dir) throws Exception {
    Path jar = EchoEngineJar.build(dir.resolve("engine"), "com.example.echo.EchoEngine");
    Path model = Files.createDirectories(dir.resolve("echo-model"));
    Files.writeString(model.resolve(EchoEngineJar.MODEL_FILE), "");
    Path yaml = Files.writeString(dir.resolve("echo.yaml"), """
        deployments:
          - name: echo
            version: "1"
            model:
              uri: %s
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
            pool: {workers_per_node: 1}
        """.formatted(model));

    Result without = run(dir, List.of("./kiln", "validate", yaml.toString()));
    Result with = run(dir, List.of("env", "KILN_CLASSPATH=" + jar, "./kiln", "validate", yaml.toString()));

    assertThat(without.code()).as(without.output()).isNotZero();
    assertThat(without.output()).contains("missing required field 'engine'").doesNotContain("Echo");
    assertThat(with.code()).as(with.output()).isZero();
    assertThat(with.output()).contains("is valid: 1 deployment(s)");
  }
}
