package io.kiln.gateway.support;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The {@code curl} command line client, run as a user runs it: {@code curl --data-binary @file} against a URL, with
 * what {@code -w} reports (status, {@code time_total}, {@code size_upload}) and the answer's body.
 */
public final class Curl {

  private static final long TIMEOUT_SECONDS = 60;

  private Curl() {
  }

  /** {@code curl} on the {@code PATH} (what {@code command -v curl} finds), or null. */
  public static Path find() {
    String path = System.getenv("PATH");
    for (String dir : path == null ? new String[0] : path.split(File.pathSeparator)) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, "curl");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  /**
   * One run's outcome: the answer's status, curl's {@code time_total} (seconds, the whole transfer) and
   * {@code size_upload} (body bytes it sent), and the answer's body.
   */
  public record Result(int status, double timeTotal, long sizeUpload, String body) {
  }

  /** {@code curl -s -S -o <answer> -w ... --data-binary @body <args...> url}: a POST of the file's bytes. */
  public static Result post(Path curl, String url, Path body, Path workDir, String... args) throws IOException,
      InterruptedException {
    Path answer = Files.createTempFile(workDir, "answer", ".out");
    List<String> command = new ArrayList<>(List.of(curl.toString(), "-s", "-S", "-o", answer.toString(),
        "-w", "%{http_code} %{time_total} %{size_upload}", "--data-binary", "@" + body));
    command.addAll(List.of(args));
    command.add(url);
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out;
    try (var stdout = p.getInputStream()) {
      out = new String(stdout.readAllBytes(), StandardCharsets.UTF_8).trim();
    }
    if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("curl did not finish in " + TIMEOUT_SECONDS + " s: " + command);
    }
    if (p.exitValue() != 0) {
      throw new AssertionError("curl exited " + p.exitValue() + ": " + out + " (" + command + ")");
    }
    String[] w = out.split(" ");
    return new Result(Integer.parseInt(w[0]), Double.parseDouble(w[1]), Long.parseLong(w[2]),
        new String(Files.readAllBytes(answer), StandardCharsets.UTF_8));
  }
}
