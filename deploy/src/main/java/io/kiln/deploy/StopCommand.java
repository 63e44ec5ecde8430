package io.kiln.deploy;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kiln stop}: stops the nodes started from this checkout, cleanly: SIGTERM, on which a node drains (not
 * ready, routers elsewhere stop sending to it, what is in flight or queued finishes within its
 * {@code --drain-grace}), then stops its actors, frees their names and leaves the cluster. Nodes that outlive the
 * timeout are killed.
 */
@Command(name = "stop", description = "Stop the local node(s) cleanly: each drains (in-flight and queued requests"
    + " finish), then its actors stop, names are freed, the node leaves.")
final class StopCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--node", description = "stop only this node id")
  String node;

  @Option(names = "--timeout", description = "seconds to wait before killing, more than the nodes' --drain-grace"
      + " (default ${DEFAULT-VALUE})", defaultValue = "60")
  int timeoutSeconds;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (timeoutSeconds < 1) {
      throw new CliException("--timeout must be at least 1 second, got " + timeoutSeconds);
    }
    List<LocalNodes.Entry> nodes = LocalNodes.alive().stream()
        .filter(e -> node == null || e.nodeId().equals(node)).toList();
    if (nodes.isEmpty()) {
      out.println(node == null ? "no local Kiln node is running" : "no local node " + node);
      return node == null ? 0 : 1;
    }
    // The other nodes together first, the head last, so leadership does not move around needlessly.
    List<LocalNodes.Entry> workers = nodes.stream().filter(e -> !e.head()).toList();
    List<LocalNodes.Entry> heads = nodes.stream().filter(LocalNodes.Entry::head).toList();
    Duration timeout = Duration.ofSeconds(timeoutSeconds);
    stopAll(workers, timeout, out);
    stopAll(heads, timeout, out);
    return 0;
  }

  /** SIGTERM to every node, then waits for each; one that outlives the timeout is killed. */
  private static void stopAll(List<LocalNodes.Entry> nodes, Duration timeout, PrintWriter out) throws Exception {
    List<CompletableFuture<ProcessHandle>> exits = new ArrayList<>();
    for (LocalNodes.Entry e : nodes) {
      Optional<ProcessHandle> handle = LocalNodes.process(e);
      if (handle.isPresent()) {
        handle.get().destroy();
        exits.add(handle.get().onExit());
      } else {
        exits.add(null);
      }
    }
    long end = System.nanoTime() + timeout.toNanos();
    for (int i = 0; i < nodes.size(); i++) {
      LocalNodes.Entry e = nodes.get(i);
      CompletableFuture<ProcessHandle> exit = exits.get(i);
      if (exit != null) {
        try {
          exit.get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
          out.println("stopped node " + e.nodeId());
        } catch (TimeoutException t) {
          LocalNodes.process(e).ifPresent(ProcessHandle::destroyForcibly);
          exit.get(10, TimeUnit.SECONDS);
          out.println("node " + e.nodeId() + " did not stop within " + timeout.toSeconds() + " s; killed it");
        }
      }
      LocalNodes.remove(e.nodeId());
    }
  }
}
