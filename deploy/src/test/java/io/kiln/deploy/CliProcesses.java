package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs the real {@code kiln} main ({@link KilnCli}) in child JVMs on the test classpath ({@link KilnProcess}), all
 * sharing one {@code kiln.home} (so their {@code .kiln/} folder is the test's own), each with its output in
 * {@code <name>.out} there. Long-running nodes are kept by name; {@link #close} kills whatever is still running,
 * including nodes that were started in the background.
 */
final class CliProcesses implements AutoCloseable {

  /** A finished command. */
  record Result(int code, String output) {
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path home;
  private final Map<String, KilnProcess> nodes = new LinkedHashMap<>();
  private int commands;

  CliProcesses(Path home) throws IOException {
    this.home = Files.createDirectories(home).toAbsolutePath();
  }

  Path home() {
    return home;
  }

  private KilnProcess.Builder builder(String name, String... args) {
    return KilnProcess.java(KilnCli.class.getName()).jvmFlags("-Dkiln.home=" + home).args(args).name(name)
        .directory(home).log(home.resolve(name + ".out"));
  }

  /** Starts a long-running command (a foreground node); its output goes to {@code <name>.out}. */
  KilnProcess startNode(String name, String... args) {
    return startNode(name, List.of(), List.of(), args);
  }

  /**
   * Starts a long-running command through {@code wrapper}, a command that execs its arguments (e.g. {@code ip netns
   * exec NS}, so the process is the JVM itself), with {@code jvmFlags} after the usual ones.
   */
  KilnProcess startNode(String name, List<String> wrapper, List<String> jvmFlags, String... args) {
    KilnProcess p = builder(name, args).wrapper(wrapper).jvmFlags(jvmFlags).start();
    nodes.put(name, p);
    return p;
  }

  /** The node started as {@code name}. */
  KilnProcess node(String name) {
    KilnProcess p = nodes.get(name);
    if (p == null) {
      throw new IllegalArgumentException("no node started as '" + name + "'; started: " + nodes.keySet());
    }
    return p;
  }

  /** Runs a command to completion; one that does not end within {@code timeout} is killed and fails the test. */
  Result run(Duration timeout, String... args) {
    KilnProcess.Result r = builder("command-" + (++commands) + "-" + args[0], args).run(timeout);
    return new Result(r.code(), r.output());
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
   * Waits (at most {@code within}) for node {@code id}'s record, failing at once with {@code p}'s log if it exits
   * first. With {@code samePid}, only a record {@code p} itself wrote counts (a node run in the foreground); without,
   * any (a {@code kiln start} that put the node in the background).
   */
  JsonNode awaitEntry(String id, KilnProcess p, Duration within, boolean samePid) {
    return p.await("node " + id + "'s record in " + home.resolve(".kiln/nodes"), within,
        () -> entry(id).filter(e -> !samePid || e.path("pid").asLong() == p.pid()));
  }

  /** {@link #awaitEntry(String, KilnProcess, Duration, boolean)} for the foreground node started as {@code id}. */
  JsonNode awaitEntry(String id, Duration within) {
    return awaitEntry(id, node(id), within, true);
  }

  /** Waits until node {@code id}'s output says it is warmed up (or ready without a full warm-up). */
  void awaitWarm(String id, KilnProcess p, Duration within) {
    p.awaitTrue("warmed up", within, () -> p.log().contains("kiln: node " + id + " warmed up (")
        || p.log().contains("kiln: node " + id + " is ready without a full warm-up ("));
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

  /** The output of the command or node started as {@code name}. */
  String output(String name) {
    try {
      return Files.readString(home.resolve(name + ".out"));
    } catch (IOException e) {
      return "(no output)";
    }
  }

  @Override
  public void close() throws Exception {
    for (KilnProcess p : nodes.values()) {
      p.process().destroyForcibly();
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
    for (KilnProcess p : nodes.values()) {
      p.close();
    }
  }
}
