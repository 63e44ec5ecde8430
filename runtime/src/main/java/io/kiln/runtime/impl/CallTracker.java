package io.kiln.runtime.impl;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Outstanding requests to other nodes, by node, so that when a node dies its callers fail at once
 * instead of waiting for their timeouts. Requests to this node are not tracked: local deaths answer
 * their callers themselves. Actor calls are also failed when the event-bus connection to their node breaks
 * ({@link #nodeUnreachable}): whatever went out on that connection will never be answered.
 */
final class CallTracker {

  private final String localNodeId;
  private final Map<String, Set<Tracked>> byNode = new ConcurrentHashMap<>();

  /** @param unreachable the failure when the node's connection breaks (node, why); null: wait for membership */
  private record Tracked(CompletableFuture<?> future, Function<String, Throwable> cause,
                         BiFunction<String, String, Throwable> unreachable) {
  }

  CallTracker(String localNodeId) {
    this.localNodeId = localNodeId;
  }

  /** Tracks {@code future} until it completes; if {@code nodeId} dies first it fails with {@code cause}. */
  <T> void track(String nodeId, CompletableFuture<T> future, Function<String, Throwable> cause) {
    track(nodeId, future, cause, null);
  }

  /**
   * Tracks {@code future} until it completes; if {@code nodeId} dies first it fails with {@code cause}, and if the
   * event-bus connection to it breaks first, with {@code unreachable} (given the node and why).
   */
  <T> void track(String nodeId, CompletableFuture<T> future, Function<String, Throwable> cause,
                 BiFunction<String, String, Throwable> unreachable) {
    if (nodeId == null || nodeId.equals(localNodeId)) {
      return;
    }
    Set<Tracked> set = byNode.computeIfAbsent(nodeId, n -> ConcurrentHashMap.newKeySet());
    Tracked t = new Tracked(future, cause, unreachable);
    set.add(t);
    future.whenComplete((v, e) -> set.remove(t));
  }

  /** Fails every outstanding request to {@code nodeId}. */
  void nodeDied(String nodeId) {
    Set<Tracked> set = byNode.remove(nodeId);
    if (set != null) {
      set.forEach(t -> t.future().completeExceptionally(t.cause().apply(nodeId)));
    }
  }

  /**
   * Fails every outstanding request to {@code nodeId} that was tracked with an unreachable failure; the others
   * (node-agent requests) wait for membership. Returns how many it failed.
   */
  int nodeUnreachable(String nodeId, String why) {
    Set<Tracked> set = byNode.get(nodeId);
    int failed = 0;
    if (set != null) {
      for (Tracked t : set) {
        if (t.unreachable() != null && t.future().completeExceptionally(t.unreachable().apply(nodeId, why))) {
          failed++;
        }
      }
    }
    return failed;
  }
}
