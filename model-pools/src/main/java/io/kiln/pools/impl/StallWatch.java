package io.kiln.pools.impl;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Bounds the silence of one download's body: reads go through it, and when no byte arrived for the read timeout it
 * closes the stream, which makes the blocked read fail ({@link #stalled} tells that failure from others). The JDK's
 * HTTP client has a timeout for the response's headers only; a server that sends headers and then stops would hold
 * the loading worker until its load timeout.
 *
 * <p>One daemon thread checks every watched download (at a tenth of its timeout, at most once a second). Not
 * thread-safe: one reader per watch.
 */
final class StallWatch implements AutoCloseable {

  private static final ScheduledExecutorService CHECKS = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "kiln-download-stall-watch");
    t.setDaemon(true);
    return t;
  });

  private final InputStream in;
  private final long timeoutNanos;
  private final ScheduledFuture<?> check;
  private volatile long lastByteNanos = System.nanoTime();
  private volatile boolean stalled;

  private StallWatch(InputStream in, Duration timeout) {
    this.in = in;
    this.timeoutNanos = timeout.toNanos();
    long period = Math.max(1, Math.min(1000, timeout.toMillis() / 10));
    this.check = CHECKS.scheduleWithFixedDelay(this::check, period, period, TimeUnit.MILLISECONDS);
  }

  /** Watches reads of {@code in}: it is closed once no byte came for {@code timeout}. */
  static StallWatch watch(InputStream in, Duration timeout) {
    return new StallWatch(in, timeout);
  }

  /** Whether {@code e} is the failure of a read whose stream this class closed (at any depth of causes). */
  static boolean stalled(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof Stalled) {
        return true;
      }
    }
    return false;
  }

  /** {@link InputStream#read(byte[])} of the watched stream; a stall fails it with a {@link #stalled} exception. */
  int read(byte[] buf) throws IOException {
    int r;
    try {
      r = in.read(buf);
    } catch (IOException e) {
      if (stalled) {
        throw new Stalled(e);
      }
      throw e;
    }
    if (stalled) {
      throw new Stalled(null);
    }
    lastByteNanos = System.nanoTime();
    return r;
  }

  private void check() {
    if (!stalled && System.nanoTime() - lastByteNanos > timeoutNanos) {
      stalled = true;
      check.cancel(false);
      try {
        in.close();
      } catch (IOException ignored) {
        // the reader's read fails either way
      }
    }
  }

  @Override
  public void close() {
    check.cancel(false);
  }

  private static final class Stalled extends IOException {
    Stalled(IOException cause) {
      super("no data within the read timeout", cause);
    }
  }
}
