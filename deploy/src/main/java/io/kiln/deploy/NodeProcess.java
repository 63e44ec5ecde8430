package io.kiln.deploy;

import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Keeps a node's process alive until SIGTERM/SIGINT, then closes the node cleanly. */
final class NodeProcess {

  private NodeProcess() {
  }

  /**
   * Records the node in {@code .kiln/nodes} and parks the calling (main) thread; the JVM's shutdown hook closes
   * the node (it leaves the cluster) and removes the record, and this returns once that is done.
   */
  static void runUntilStopped(KilnNode node, LocalNodes.Entry entry, PrintWriter err) throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      err.println("kiln: stopping node " + entry.nodeId() + "...");
      err.flush();
      try {
        node.close();
      } finally {
        LocalNodes.remove(entry.nodeId());
        stopped.countDown();
      }
    }, "kiln-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    LocalNodes.write(entry);
    while (!stopped.await(1, TimeUnit.HOURS)) {
      // still running
    }
  }
}
