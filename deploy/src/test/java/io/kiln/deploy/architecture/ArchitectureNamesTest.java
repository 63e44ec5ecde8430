package io.kiln.deploy.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ARCHITECTURE.md names only what exists: {@code docs/tools/check-architecture-names.py} (standard-library Python)
 * checks every backticked class, member, file, flag, meter and store against the repository's files and Java
 * sources. Here because deploy sits above every module; the script reads the source tree, not the class path.
 * The canary runs first: the checker must refuse wrong names of every kind it checks, or a pass would prove nothing.
 */
@Tag("slow")
class ArchitectureNamesTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Path SCRIPT = ROOT.resolve("docs/tools/check-architecture-names.py");

  @Test
  void theCheckerRefusesWrongNamesOfEveryKind() throws Exception {
    Run run = run("--self-test");

    assertThat(run.exit).as(run.output).isZero();
    assertThat(run.output).contains("0 wrong");
  }

  @Test
  void aStaleNameFailsTheCheckNamingItsLine(@TempDir Path dir) throws Exception {
    Path doc = dir.resolve("stale.md");
    Files.writeString(doc, "# t\n\nThe pool's `PoolManager` and its `NoSuchSweepClass`.\n");

    Run run = run(doc.toString());

    assertThat(run.exit).isEqualTo(1);
    assertThat(run.output).contains("stale.md:3: `NoSuchSweepClass`").doesNotContain("`PoolManager`");
  }

  @Test
  void everyNameInArchitectureMdExists() throws Exception {
    Run run = run();

    assertThat(run.exit).as(run.output).isZero();
    assertThat(run.output).containsPattern("\\d{3,} names checked, 0 not found");
  }

  private record Run(int exit, String output) {
  }

  private static Run run(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    // Debian's interpreter where run-tests installs it; any python3 ≥ 3.8 runs the script (standard library only).
    command.add(Files.isExecutable(Path.of("/usr/bin/python3")) ? "/usr/bin/python3" : "python3");
    command.add(SCRIPT.toString());
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).directory(ROOT.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    assertThat(p.waitFor(300, TimeUnit.SECONDS)).as("the checker finished").isTrue();
    return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }
}
