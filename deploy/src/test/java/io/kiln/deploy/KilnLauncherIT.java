package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
    Path out = Files.createTempFile(dir, "launcher", ".out");
    Process p = new ProcessBuilder(command).directory(KilnCliTest.repositoryRoot().toFile())
        .redirectErrorStream(true).redirectOutput(out.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor();
      throw new AssertionError(command + " did not finish in 120 s:\n" + Files.readString(out));
    }
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
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
