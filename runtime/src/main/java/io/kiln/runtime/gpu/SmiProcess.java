package io.kiln.runtime.gpu;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs {@code nvidia-smi} once, bounded in time and output; shared by {@link GpuDiscovery} and {@link GpuSampler}. */
final class SmiProcess {

  private static final int MAX_OUTPUT_BYTES = 1 << 20;

  private SmiProcess() {
  }

  /**
   * The tool's output, when it exits 0 within {@code timeout}.
   *
   * @param hint appended to the message of a failure or a timeout (what the user can do), or ""
   * @throws GpuDiscoveryException when it cannot start, fails, hangs (it is killed), prints over 1 MiB, or the
   *     calling thread is interrupted (it is killed too, and the interrupt flag stays set)
   */
  static String run(Path tool, List<String> args, Duration timeout, String hint) {
    List<String> command = new ArrayList<>();
    command.add(tool.toString());
    command.addAll(args);
    Path out = null;
    Process p = null;
    try {
      out = Files.createTempFile("kiln-nvidia-smi", ".out");
      // Into a file, not a pipe: a tool that hangs with its pipe full could never be timed out cleanly.
      p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        throw new GpuDiscoveryException(String.join(" ", command) + " did not answer within " + timeout.toMillis()
            + " ms (a hung driver?)" + hint);
      }
      String text = read(out);
      if (p.exitValue() != 0) {
        throw new GpuDiscoveryException(String.join(" ", command) + " failed (exit " + p.exitValue() + "): "
            + text.strip() + hint);
      }
      return text;
    } catch (IOException e) {
      throw new GpuDiscoveryException("cannot run " + tool + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new GpuDiscoveryException("interrupted while running " + tool, e);
    } finally {
      if (out != null) {
        try {
          Files.deleteIfExists(out);
        } catch (IOException ignored) {
          // a temp file left behind is harmless
        }
      }
    }
  }

  private static String read(Path out) throws IOException {
    long size = Files.size(out);
    if (size > MAX_OUTPUT_BYTES) {
      throw new GpuDiscoveryException("nvidia-smi printed " + size + " bytes, more than " + MAX_OUTPUT_BYTES);
    }
    return Files.readString(out, StandardCharsets.UTF_8);
  }

  static boolean notAvailable(String field) {
    return field.isEmpty() || field.equals("[N/A]") || field.equals("N/A");
  }
}
