package io.kiln.pools.spi;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps an engine's native memory from being freed under a running call. A runner runs each call through
 * {@link #run} and frees its engine through {@link #close}: close waits for a call running on another thread (a node
 * closing its workers, a worker restarted as stuck) for up to {@link #CLOSE_WAIT_MS}, and a call still running then
 * keeps the engine open, logged, rather than have its memory freed under it: an ONNX Runtime session closed under
 * {@code OrtSession.run} crashes the JVM (SIGSEGV; seen when a node shut down under load). Calls after close are
 * refused with {@link IllegalStateException}.
 *
 * <p>Thread-safe. {@link #run} is uncontended on the request path (the runner's own thread, once per call); it blocks
 * only a concurrent {@link #close}.
 */
public final class EngineGuard {

  private static final Logger LOG = LoggerFactory.getLogger(EngineGuard.class);
  /** How long {@link #close} waits for a running call before it leaves the engine open instead. */
  public static final long CLOSE_WAIT_MS = 30_000;

  private final String what;
  private final ReentrantLock running = new ReentrantLock();
  private volatile boolean closed;

  /** @param what the runner, as errors and the log name it (e.g. "the model runner of /models/rec") */
  public EngineGuard(String what) {
    this.what = Objects.requireNonNull(what, "what");
  }

  /**
   * Runs {@code call} unless closed.
   *
   * @throws IllegalStateException when closed
   */
  public <T> T run(Supplier<T> call) {
    running.lock();
    try {
      if (closed) {
        throw new IllegalStateException(what + " is closed");
      }
      return call.get();
    } finally {
      running.unlock();
    }
  }

  /** Whether {@link #close} was called. */
  public boolean closed() {
    return closed;
  }

  /**
   * Runs {@code release} once, at once, whether a call runs or not: for an engine whose release is what ends a stuck
   * call safely (a worker process killed: the call fails on its closed pipe); idempotent.
   */
  public synchronized void closeNow(Runnable release) {
    if (!closed) {
      closed = true;
      release.run();
    }
  }

  /** Runs {@code release} once, when no call runs (see the class comment); idempotent. Blocking. */
  public synchronized void close(Runnable release) {
    if (closed) {
      return;
    }
    closed = true;
    boolean idle;
    try {
      idle = running.tryLock(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      idle = running.tryLock();
    }
    if (!idle) {
      LOG.warn("{}: a call still runs {} ms after close was asked; its engine is left open rather than freed under it",
          what, CLOSE_WAIT_MS);
      return;
    }
    try {
      release.run();
    } finally {
      running.unlock();
    }
  }
}
