package io.kiln.deploy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code kiln stop}: stops the nodes started from this checkout, cleanly (they leave the cluster). */
@Command(name = "stop", description = "Stop the local node(s) cleanly: actors stop, names are freed, the node leaves.")
final class StopCommand implements Callable<Integer> {

  @Option(names = "--node", description = "stop only this node id")
  String node;

  @Option(names = "--timeout", description = "seconds to wait before killing (default ${DEFAULT-VALUE})",
      defaultValue = "30")
  int timeoutSeconds;

  @Override
  public Integer call() throws Exception {
    List<LocalNodes.Entry> nodes = LocalNodes.alive().stream()
        .filter(e -> node == null || e.nodeId().equals(node)).toList();
    if (nodes.isEmpty()) {
      System.out.println(node == null ? "no local Kiln node is running" : "no local node " + node);
      return node == null ? 0 : 1;
    }
    // Workers first, the head last, so the cluster does not churn leadership needlessly.
    for (int i = nodes.size() - 1; i >= 0; i--) {
      LocalNodes.Entry e = nodes.get(i);
      stop(e, Duration.ofSeconds(timeoutSeconds));
    }
    return 0;
  }

  private static void stop(LocalNodes.Entry e, Duration timeout) throws Exception {
    var handle = ProcessHandle.of(e.pid());
    if (handle.isEmpty()) {
      LocalNodes.remove(e.nodeId());
      return;
    }
    handle.get().destroy(); // SIGTERM: the node's shutdown hook leaves the cluster cleanly
    try {
      handle.get().onExit().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      System.out.println("stopped node " + e.nodeId());
    } catch (java.util.concurrent.TimeoutException t) {
      handle.get().destroyForcibly();
      System.out.println("node " + e.nodeId() + " did not stop within " + timeout.toSeconds() + " s; killed it");
    }
    LocalNodes.remove(e.nodeId());
  }
}
