package io.kiln.runtime.impl;

import io.vertx.core.Context;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The threads of one incarnation of a WORKER-mode actor (as many as its {@code max_concurrency}). Plain
 * daemon threads rather than a Vert.x worker executor: those are closed, and their threads interrupted,
 * when the actor's verticle is undeployed, which would tear native model code down under a running call.
 */
final class ActorThreads {

  private static final Logger LOG = LoggerFactory.getLogger(ActorThreads.class);

  private final ExecutorService pool;

  private ActorThreads(ExecutorService pool) {
    this.pool = pool;
  }

  static ActorThreads start(String namePrefix, int threads) {
    AtomicInteger n = new AtomicInteger();
    return new ActorThreads(Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, namePrefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    }));
  }

  /** Runs {@code work} on these threads and hands its result back on {@code context}. */
  <T> void run(Context context, Callable<T> work, Consumer<T> then, Consumer<Throwable> rejected) {
    try {
      pool.execute(() -> {
        T result;
        try {
          result = work.call();
        } catch (Exception e) {
          handBack(context, () -> rejected.accept(e));
          return;
        }
        handBack(context, () -> then.accept(result));
      });
    } catch (RejectedExecutionException e) {
      context.runOnContext(v -> rejected.accept(e));
    }
  }

  // A call that outlives its node's Vert.x (closed under it, e.g. a test's cluster closed as a long call returns)
  // has no one left to answer: drop the answer rather than throw from a pool thread.
  private static void handBack(Context context, Runnable r) {
    try {
      context.runOnContext(v -> r.run());
    } catch (RejectedExecutionException closed) {
      // the event loop is gone with its Vert.x
    }
  }

  /**
   * Retires an incarnation: its threads finish what they are running (a call is never interrupted mid-way),
   * then close the instance if it holds resources, then exit. {@code threads} is null for event-loop actors.
   */
  static void retire(ActorThreads threads, Object instance, String actorName) {
    if (threads == null) {
      closeQuietly(instance, actorName);
      return;
    }
    if (instance instanceof AutoCloseable) {
      threads.pool.execute(() -> closeQuietly(instance, actorName));
    }
    threads.pool.shutdown();
  }

  static void closeQuietly(Object instance, String actorName) {
    if (instance instanceof AutoCloseable c) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.debug("closing actor {} failed", actorName, e);
      }
    }
  }
}
