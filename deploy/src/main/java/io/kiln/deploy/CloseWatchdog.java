package io.kiln.deploy;

import io.kiln.runtime.TimeoutPolicy;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bounds a stopping node's close ({@link NodeProcess}): a close still running {@link #NODE_CLOSE} after it began (a
 * cluster operation or a library's own shutdown waiting on a member that has just died) ends the process with
 * status 1, after logging every thread's stack, so that a stop never hangs and the log says where it waited. What
 * the close had not done yet is what a killed process leaves: the members that stay free its names and its row.
 */
final class CloseWatchdog {

  /** How long a node's close (after its drain) may take before the process exits without it. */
  static final TimeoutPolicy NODE_CLOSE = new TimeoutPolicy("node-close", Duration.ofSeconds(30));

  private static final Logger LOG = LoggerFactory.getLogger(CloseWatchdog.class);
  private static final int FRAMES = 12;

  private CloseWatchdog() {
  }

  /**
   * Starts a daemon thread that waits for {@code closed}; if it is not counted down within {@code bound}, logs the
   * threads, runs {@code before} (e.g. removing the node's local record) and calls {@code exit} with 1.
   */
  static Thread watch(String nodeId, CountDownLatch closed, TimeoutPolicy bound, Runnable before, IntConsumer exit) {
    Thread t = new Thread(() -> {
      try {
        if (closed.await(bound.toMillis(), TimeUnit.MILLISECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        return;
      }
      LOG.error("node {} did not close within {}: exiting with status 1; its threads:\n{}", nodeId, bound, threads());
      try {
        before.run();
      } finally {
        exit.accept(1);
      }
    }, "kiln-close-watchdog");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** Every live thread's name, state and top {@value #FRAMES} frames. */
  static String threads() {
    StringBuilder b = new StringBuilder();
    for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
      Thread t = e.getKey();
      b.append('"').append(t.getName()).append("\" ").append(t.getState()).append(t.isDaemon() ? " daemon" : "")
          .append('\n');
      StackTraceElement[] frames = e.getValue();
      for (int i = 0; i < Math.min(FRAMES, frames.length); i++) {
        b.append("    at ").append(frames[i]).append('\n');
      }
      if (frames.length > FRAMES) {
        b.append("    ... ").append(frames.length - FRAMES).append(" more\n");
      }
    }
    return b.toString();
  }
}
