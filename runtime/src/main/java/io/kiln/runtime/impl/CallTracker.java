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
  private final Map<String, Set<Tracked>> byNode = new ConcurrentHashMap<>();

  private record Tracked(CompletableFuture<?> future, Function<String, Throwable> cause) {
  }

  CallTracker(String localNodeId) {
    this.localNodeId = localNodeId;
  }

  /** Tracks {@code future} until it completes; if {@code nodeId} dies first it fails with {@code cause}. */
  <T> void track(String nodeId, CompletableFuture<T> future, Function<String, Throwable> cause) {
    if (nodeId == null || nodeId.equals(localNodeId)) {
      return;
    }
    Set<Tracked> set = byNode.computeIfAbsent(nodeId, n -> ConcurrentHashMap.newKeySet());
    Tracked t = new Tracked(future, cause);
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
}
