package io.kiln.runtime.testing;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Starts Kiln nodes as separate JVMs on the test classpath, for multi-process cluster tests. Each node's
 * output goes to {@code target/node-logs/<node>.log}; {@link #kill} is SIGKILL.
 */
public final class NodeProcesses implements AutoCloseable {

  /** JVM flags Hazelcast wants on Java 17, as in the build. */
  public static final List<String> JVM_FLAGS = List.of("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
      "--add-modules", "java.se", "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
      "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens", "java.management/sun.management=ALL-UNNAMED",
      "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
      "-Dhazelcast.phone.home.enabled=false", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info");

  private final Map<String, Process> nodes = new LinkedHashMap<>();
  private final Path logs;

  public NodeProcesses(Path logs) throws IOException {
    this.logs = Files.createDirectories(logs);
  }

  public static String testClasspath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  /** Starts a node process; the future completes with its cluster port once it has joined. */
  public CompletableFuture<Integer> start(String mainClass, String nodeId, String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_FLAGS);
    cmd.add("-cp");
    cmd.add(testClasspath());
    cmd.add(mainClass);
    cmd.add("--node-id");
    cmd.add(nodeId);
    cmd.addAll(List.of(args));
    File log = logs.resolve(nodeId + ".log").toFile();
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    nodes.put(nodeId, p);
    CompletableFuture<Integer> ready = new CompletableFuture<>();
    Thread pump = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
           var out = Files.newBufferedWriter(log.toPath(), StandardCharsets.UTF_8)) {
        String line;
        while ((line = r.readLine()) != null) {
          out.write(line);
          out.newLine();
          out.flush();
          if (line.startsWith("KILN-NODE-READY ")) {
            ready.complete(Integer.parseInt(line.substring("KILN-NODE-READY ".length()).trim()));
          }
        }
      } catch (IOException ignored) {
        // the process went away
      } finally {
        ready.completeExceptionally(new IllegalStateException("node " + nodeId + " exited before joining; see " + log));
      }
    }, "node-log-" + nodeId);
    pump.setDaemon(true);
    pump.start();
    return ready;
  }

  public static int await(CompletableFuture<Integer> ready, Duration timeout) throws Exception {
    return ready.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** SIGKILL: the process gets no chance to clean up. */
  public void kill(String nodeId) throws InterruptedException {
    Process p = nodes.remove(nodeId);
    if (p != null) {
      p.destroyForcibly();
      p.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /** A clean stop: closes the node's stdin so it leaves the cluster. */
  public void stop(String nodeId) throws Exception {
    Process p = nodes.remove(nodeId);
    if (p != null) {
      p.getOutputStream().close();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  @Override
  public void close() throws Exception {
    for (String id : new ArrayList<>(nodes.keySet())) {
      stop(id);
    }
  }
}
