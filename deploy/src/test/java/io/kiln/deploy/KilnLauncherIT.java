package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

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
 * subcommand and the bash completion script, as a user runs them.
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
}
