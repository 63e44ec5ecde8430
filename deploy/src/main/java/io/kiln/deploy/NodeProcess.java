package io.kiln.deploy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Keeps a node's process alive until SIGTERM/SIGINT, then closes the node cleanly. */
final class NodeProcess {

  private NodeProcess() {
  }

  static void runUntilStopped(KilnNode node, LocalNodes.Entry entry) throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      System.err.println("kiln: stopping node " + entry.nodeId() + "...");
      try {
        node.close();
      } finally {
        LocalNodes.remove(entry.nodeId());
        stopped.countDown();
      }
    }, "kiln-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    LocalNodes.write(entry);
    // The main thread parks here; the shutdown hook does the work when the process is asked to stop.
    while (!stopped.await(1, TimeUnit.HOURS)) {
      // still running
    }
  }
}
