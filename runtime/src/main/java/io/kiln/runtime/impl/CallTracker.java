package io.kiln.runtime.impl;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Outstanding requests to other nodes, by node, so that when a node dies its callers fail at once
 * instead of waiting for their timeouts. Requests to this node are not tracked: local deaths answer
 * their callers themselves.
 */
final class CallTracker {

  private final String localNodeId;
  private final Map<String, Set<CompletableFuture<?>>> byNode = new ConcurrentHashMap<>();

  CallTracker(String localNodeId) {
    this.localNodeId = localNodeId;
  }

  <T> void track(String nodeId, CompletableFuture<T> future) {
    if (nodeId == null || nodeId.equals(localNodeId)) {
      return;
    }
    Set<CompletableFuture<?>> set = byNode.computeIfAbsent(nodeId, n -> ConcurrentHashMap.newKeySet());
    set.add(future);
    future.whenComplete((v, e) -> set.remove(future));
  }

  /** Fails every outstanding request to {@code nodeId} with the error {@code cause} builds. */
  void nodeDied(String nodeId, Function<String, Throwable> cause) {
    Set<CompletableFuture<?>> set = byNode.remove(nodeId);
    if (set != null) {
      Throwable t = cause.apply(nodeId);
      set.forEach(f -> f.completeExceptionally(t));
    }
  }
}
