package io.kiln.deploy.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Prometheus's own {@code promtool}, as a scraper's operator would run it ({@code ./run-tests} installs Debian's
 * {@code prometheus} package, which ships it): {@code check metrics} over an exposition, and any other command
 * ({@code check config}, {@code check rules}, {@code test rules}) in a directory.
 */
final class Promtool {

  /** What promtool said: its exit code, its output, and the output's problem lines. */
  record Result(int exitCode, String output, List<String> problems) {
  }

  private Promtool() {
  }

  static Result checkMetrics(String exposition) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(tool().toString(), "check", "metrics").redirectErrorStream(true).start();
    p.getOutputStream().write(exposition.getBytes(StandardCharsets.UTF_8));
    p.getOutputStream().close();
    return finish(p);
  }

  /** {@code promtool args...} run in {@code dir} (relative paths in the files resolve from their own folder). */
  static Result run(Path dir, String... args) throws IOException, InterruptedException {
    List<String> command = new java.util.ArrayList<>(List.of(tool().toString()));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    return finish(p);
  }

  private static Path tool() {
    Path tool = Path.of(System.getProperty("kiln.test.promtool", "/usr/bin/promtool"));
    if (!Files.isExecutable(tool)) {
      throw new IllegalStateException(tool + " is missing: install Debian's prometheus package (./run-tests does,"
          + " as root) or point -Dkiln.test.promtool at a promtool");
    }
    return tool;
  }

  private static Result finish(Process p) throws IOException, InterruptedException {
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("promtool did not finish within 60 s");
    }
    List<String> problems = out.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
    return new Result(p.exitValue(), out, problems);
  }
}
