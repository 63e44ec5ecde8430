package io.kiln.runtime.testing;

import io.kiln.testkit.KilnProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Starts Kiln nodes ({@link NodeMain} or another main of the same contract) as separate JVMs on the test classpath,
 * for multi-process cluster tests, through the test kit's launcher. Each node's output goes to
 * {@code <logs>/<node>.log}; {@link #kill} is SIGKILL, {@link #stop} a clean leave.
 */
public final class NodeProcesses implements AutoCloseable {

  /** The line a node prints once it joined, followed by its cluster port. */
  static final String READY = "KILN-NODE-READY ";

  private final Map<String, KilnProcess> nodes = new LinkedHashMap<>();
  private final Path logs;

  public NodeProcesses(Path logs) throws IOException {
    this.logs = Files.createDirectories(logs);
  }

  /** Starts a node process; {@link #await} waits until it has joined. */
  public KilnProcess start(String mainClass, String nodeId, String... args) {
    KilnProcess p = KilnProcess.java(mainClass).jvmFlags("-Xmx384m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info")
        .args("--node-id", nodeId).args(args).name("node " + nodeId).log(logs.resolve(nodeId + ".log")).stdinPipe()
        .start();
    nodes.put(nodeId, p);
    return p;
  }

  /** Waits until {@code node} has joined; returns its cluster port. Fails with its log if it exits first. */
  public static int await(KilnProcess node, Duration timeout) {
    return Integer.parseInt(node.awaitLogLine(READY, timeout));
  }

  /** SIGKILL: the process gets no chance to clean up. */
  public void kill(String nodeId) {
    KilnProcess p = nodes.remove(nodeId);
    if (p != null) {
      p.kill();
    }
  }

  /**
   * Sends {@code signal} ({@code STOP}, {@code CONT}) to the node's process: {@code STOP} freezes it with its sockets
   * open, as a hung host looks from outside (its kernel even accepts connections), {@code CONT} resumes it.
   */
  public void signal(String nodeId, String signal) throws IOException, InterruptedException {
    KilnProcess p = nodes.get(nodeId);
    if (p == null) {
      throw new IllegalArgumentException("no node " + nodeId);
    }
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
    if (kill.waitFor() != 0) {
      throw new IOException("kill -" + signal + " " + p.pid() + " failed");
    }
  }

  /** A clean stop: closes the node's stdin so it leaves the cluster (killed after 30 s). */
  public void stop(String nodeId) throws InterruptedException {
    KilnProcess p = nodes.remove(nodeId);
    if (p != null) {
      p.closeStdin();
      if (!p.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
        p.kill();
      }
    }
  }

  @Override
  public void close() throws InterruptedException {
    for (String id : new ArrayList<>(nodes.keySet())) {
      stop(id);
    }
  }
}
