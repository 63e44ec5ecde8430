package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Runs the real {@code kiln} main ({@link KilnCli}) in child JVMs on the test classpath, all sharing one
 * {@code kiln.home} (so their {@code .kiln/} folder is the test's own), each with its output in a file there.
 * Long-running nodes are kept as {@link Process}es; {@link #close} kills whatever is still running, including
 * nodes that were started in the background.
 */
final class CliProcesses implements AutoCloseable {

  /** JVM flags of the {@code kiln} script (Hazelcast on Java 17, offline DJL), sized for small test nodes. */
  static final List<String> JVM_FLAGS = List.of("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
      "--add-modules", "java.se", "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
      "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens", "java.management/sun.management=ALL-UNNAMED",
      "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
      "-Dai.djl.offline=true", "-Dhazelcast.phone.home.enabled=false");

  /** A finished command. */
  record Result(int code, String output) {
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path home;
  private final Map<String, Process> nodes = new LinkedHashMap<>();
  private int commands;

  CliProcesses(Path home) throws IOException {
    this.home = Files.createDirectories(home).toAbsolutePath();
  }

  Path home() {
    return home;
  }

  private ProcessBuilder builder(Path output, String... args) {
    return builder(output, List.of(), List.of(), args);
  }

  private ProcessBuilder builder(Path output, List<String> wrapper, List<String> jvmFlags, String... args) {
    List<String> cmd = new ArrayList<>(wrapper);
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_FLAGS);
    cmd.addAll(jvmFlags);
    cmd.add("-Dkiln.home=" + home);
    cmd.add("-cp");
    cmd.add(testClasspath());
    cmd.add(KilnCli.class.getName());
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).directory(home.toFile()).redirectErrorStream(true)
        .redirectOutput(output.toFile()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
  }

  /** The test classpath (Surefire and Failsafe may run tests from a manifest-only jar). */
  static String testClasspath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  /** Starts a long-running command (a foreground node); its output goes to {@code <name>.out}. */
  Process startNode(String name, String... args) throws IOException {
    return startNode(name, List.of(), List.of(), args);
  }

  /**
   * Starts a long-running command through {@code wrapper}, a command that execs its arguments (e.g. {@code ip netns
   * exec NS}, so the process is the JVM itself), with {@code jvmFlags} after the usual ones.
   */
  Process startNode(String name, List<String> wrapper, List<String> jvmFlags, String... args) throws IOException {
    Process p = builder(home.resolve(name + ".out"), wrapper, jvmFlags, args).start();
    nodes.put(name, p);
    return p;
  }

  /** Runs a command to completion. */
  Result run(Duration timeout, String... args) throws Exception {
    Path out = home.resolve("command-" + (++commands) + "-" + args[0] + ".out");
    Process p = builder(out, args).start();
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly().waitFor();
      throw new AssertionError("kiln " + String.join(" ", args) + " did not finish within " + timeout + ":\n"
          + Files.readString(out));
    }
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
  }

  /** The {@code .kiln/nodes/<id>.json} record of a running node, once it wrote it. */
  Optional<JsonNode> entry(String nodeId) {
    Path f = home.resolve(".kiln/nodes/" + nodeId + ".json");
    try {
      return Files.isRegularFile(f) ? Optional.of(JSON.readTree(f.toFile())) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty(); // being written
    }
  }

  /**
   * Waits (at most {@code within}) for node {@code id}'s record, failing at once with its output (file
   * {@code outputName}) if {@code p} exits first. With {@code samePid}, only a record {@code p} itself wrote counts
   * (a node run in the foreground); without, any (a {@code kiln start} that put the node in the background).
   */
  JsonNode awaitEntry(String id, Process p, Duration within, String outputName, boolean samePid) {
    org.awaitility.Awaitility.await().atMost(within).pollInterval(Duration.ofMillis(200)).until(() -> {
      if (!p.isAlive()) {
        throw new AssertionError(id + " exited with " + p.exitValue() + ":\n" + output(outputName));
      }
      return entry(id).filter(e -> !samePid || e.path("pid").asLong() == p.pid()).isPresent();
    });
    return entry(id).orElseThrow();
  }

  List<Path> entries() throws IOException {
    Path dir = home.resolve(".kiln/nodes");
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (var files = Files.list(dir)) {
      return files.toList();
    }
  }

  String output(String name) {
    try {
      return Files.readString(home.resolve(name + ".out"));
    } catch (IOException e) {
      return "(no output)";
    }
  }

  @Override
  public void close() throws Exception {
    for (Process p : nodes.values()) {
      p.destroyForcibly();
    }
    // Nodes started in the background are not our children: find them by the records they left.
    for (Path f : entries()) {
      try {
        JsonNode e = JSON.readTree(f.toFile());
        ProcessHandle.of(e.path("pid").asLong()).ifPresent(h -> {
          if (h.info().commandLine().orElse("").contains("-Dkiln.home=" + home)) {
            h.destroyForcibly();
          }
        });
      } catch (IOException ignored) {
        // nothing to clean up
      }
    }
    for (Process p : nodes.values()) {
      p.waitFor(30, TimeUnit.SECONDS);
    }
  }
}
