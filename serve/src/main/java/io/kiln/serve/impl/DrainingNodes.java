package io.kiln.serve.impl;

import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SharedStore;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.stream.Collectors;

/**
 * The nodes draining to leave the cluster (a graceful shutdown), in the store {@value #STORE}: node id → since
 * when. The leader's controller plans no pool onto them and leaves the pools they run to them (the node closes
 * them once they are idle; retiring them would refuse the requests still on their way). A node takes its own
 * entry out when it starts, so a restarted node of the same id serves again; the leader drops entries of nodes
 * that left. Thread-safe; non-blocking.
 */
public final class DrainingNodes {

  public static final String STORE = "kiln.draining-nodes";

  /** What a draining node's entry holds. */
  public record Draining(long sinceMillis) {
  }

  private final SharedStore<Draining> store;

  public DrainingNodes(KilnRuntime runtime) {
    this.store = runtime.store(STORE, Draining.class);
  }

  public CompletionStage<Void> mark(String nodeId, long nowMillis) {
    return store.put(nodeId, new Draining(nowMillis));
  }

  public CompletionStage<Void> unmark(String nodeId) {
    return store.remove(nodeId);
  }

  /** The draining nodes among {@code alive}; entries of nodes not alive any more are removed. */
  CompletionStage<Set<String>> among(Set<String> alive) {
    return store.entries().thenApply(entries -> {
      for (Map.Entry<String, SharedStore.Entry<Draining>> e : entries.entrySet()) {
        if (!alive.contains(e.getKey())) {
          store.remove(e.getKey(), e.getValue());
        }
      }
      return entries.keySet().stream().filter(alive::contains).collect(Collectors.toUnmodifiableSet());
    });
  }
}
