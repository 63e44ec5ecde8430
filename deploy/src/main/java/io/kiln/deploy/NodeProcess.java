package io.kiln.deploy;

import io.kiln.deploy.node.DrainOptions;
import io.kiln.deploy.node.DrainReport;
import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a node's process alive until SIGTERM/SIGINT, then drains and closes the node cleanly and lets the process
 * exit 0: the first signal drains ({@link KilnNode#drain}, within the grace), a second cuts the drain short. A close
 * that outlasts {@link CloseWatchdog#NODE_CLOSE} ends the process with status 1, its threads logged. The
 * signals are handled with {@code sun.misc.Signal} so that the JVM does not exit 143 (130) by itself; where that
 * is refused, and for any other way the JVM is asked to exit, a shutdown hook does the same.
 */
final class NodeProcess {

  private static final Logger LOG = LoggerFactory.getLogger(NodeProcess.class);

  private final KilnNode node;
  private final LocalNodes.Entry entry;
  private final DrainOptions drain;
  private final PrintWriter err;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private boolean stopping; // guarded by this

  private NodeProcess(KilnNode node, LocalNodes.Entry entry, DrainOptions drain, PrintWriter err) {
    this.node = node;
    this.entry = entry;
    this.drain = drain;
    this.err = err;
  }

  /**
   * Records the node in {@code .kiln/nodes} and parks the calling (main) thread until a stop signal's drain and
   * close are done (the node left the cluster, the record is removed); then returns, and the caller exits.
   */
  static void runUntilStopped(KilnNode node, LocalNodes.Entry entry, DrainOptions drain, PrintWriter err)
      throws InterruptedException {
    NodeProcess p = new NodeProcess(node, entry, drain, err);
    Runtime.getRuntime().addShutdownHook(new Thread(p::exiting, "kiln-shutdown"));
    LocalNodes.write(entry); // first: `kiln status` and the tests look for it as soon as the node said it is ready
    p.handle("TERM");
    p.handle("INT");
    while (!p.stopped.await(1, TimeUnit.HOURS)) {
      // still running
    }
  }

  @SuppressWarnings("sunapi")
  private void handle(String signal) {
    try {
      sun.misc.Signal.handle(new sun.misc.Signal(signal), s -> signalled("SIG" + signal));
    } catch (IllegalArgumentException e) {
      LOG.warn("cannot handle SIG{} ({}); the shutdown hook drains the node instead", signal, e.getMessage());
    }
  }

  private void signalled(String signal) {
    synchronized (this) {
      if (stopping) {
        err.println("kiln: " + signal + " again: closing node " + entry.nodeId() + " now");
        err.flush();
        node.cutDrainShort();
        return;
      }
      stopping = true;
    }
    Thread t = new Thread(() -> stop(signal), "kiln-drain");
    t.setDaemon(false);
    t.start();
  }

  /** The shutdown hook: stops the node if no signal did; otherwise cuts the drain short and waits for the close. */
  private void exiting() {
    boolean first;
    synchronized (this) {
      first = !stopping;
      stopping = true;
    }
    if (first) {
      stop("shutdown");
      return;
    }
    node.cutDrainShort();
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void stop(String why) {
    err.println("kiln: stopping node " + entry.nodeId() + "...");
    if (drain.enabled()) {
      err.println("kiln: " + why + ": draining node " + entry.nodeId() + " (grace " + drain.grace().toMillis() / 1000.0
          + " s; signal again to close at once)");
    }
    err.flush();
    try {
      DrainReport r = node.drain(drain);
      if (r.ran()) {
        err.println("kiln: node " + entry.nodeId() + " " + r.describe());
        err.flush();
      }
    } catch (RuntimeException e) {
      LOG.warn("draining node {} failed; closing it", entry.nodeId(), e);
    }
    CloseWatchdog.watch(entry.nodeId(), stopped, CloseWatchdog.NODE_CLOSE, () -> {
      err.println("kiln: node " + entry.nodeId() + " did not close within " + CloseWatchdog.NODE_CLOSE
          + "; exiting with status 1 (its threads are in the log)");
      err.flush();
      LocalNodes.remove(entry.nodeId());
    }, status -> Runtime.getRuntime().halt(status));
    try {
      node.close();
    } finally {
      LocalNodes.remove(entry.nodeId());
      stopped.countDown();
    }
  }
}
