package io.kiln.runtime.impl;

import io.kiln.runtime.Futures;
import io.kiln.runtime.TimeoutPolicy;
import io.vertx.core.Future;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's way out of the cluster ({@link RuntimeImpl#shutdown}): its actors stopped, its registry entries and its
 * row removed from the cluster's maps, then the cluster left and what the node's creator opened for it closed. Each
 * step's time is logged, so that a slow exit says where it waited. The clean-up of the cluster's maps is bounded
 * ({@link TimeoutPolicy#LEAVE_CLEANUP}): a map operation can wait on a partition whose owner has just died; past the
 * bound the node leaves anyway, and the members that stay free what it left (the registry janitor frees a gone
 * node's names, its row reads not alive).
 */
final class Leaving {

  private static final Logger LOG = LoggerFactory.getLogger(Leaving.class);

  private Leaving() {
  }

  /**
   * @param stopActors kills the hosted actors and stops serving requests
   * @param cleanUp removes this node's registry entries and row
   * @param leave leaves the cluster
   * @param closeRest closes what the node's creator opened for it (its Vert.x, for a node of its own)
   */
  static Future<Void> run(String nodeId, TimeoutPolicy cleanUpBound, Supplier<Future<Void>> stopActors,
                          Supplier<CompletionStage<Void>> cleanUp, Supplier<CompletionStage<Void>> leave,
                          Supplier<Future<Void>> closeRest) {
    long began = System.nanoTime();
    long[] at = {began};
    return stopActors.get()
        .andThen(ar -> step(nodeId, "actors stopped", at))
        .compose(v -> Future.fromCompletionStage(cleanUp.get().toCompletableFuture()
            .orTimeout(cleanUpBound.toMillis(), TimeUnit.MILLISECONDS)))
        .transform(ar -> {
          if (ar.failed()) {
            Throwable why = Futures.unwrapCompletion(ar.cause());
            LOG.warn("node {} leaving: its registry entries and row not removed ({}); leaving anyway, the members"
                + " that stay free them", nodeId, why instanceof TimeoutException ? "not done within " + cleanUpBound
                : why.toString());
          } else {
            step(nodeId, "registry entries and row removed", at);
          }
          return Future.fromCompletionStage(leave.get());
        })
        .andThen(ar -> step(nodeId, "left the cluster", at))
        .compose(v -> closeRest.get())
        .andThen(ar -> LOG.info("node {} shut down in {} ms", nodeId,
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began)));
  }

  private static void step(String nodeId, String what, long[] at) {
    long now = System.nanoTime();
    LOG.info("node {} leaving: {} in {} ms", nodeId, what, TimeUnit.NANOSECONDS.toMillis(now - at[0]));
    at[0] = now;
  }
}
