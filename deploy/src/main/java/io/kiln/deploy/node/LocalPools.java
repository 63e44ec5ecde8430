package io.kiln.deploy.node;

import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.PoolStats;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The pools running on one draining node, as its load board shows them: each is told once that its node is
 * leaving ({@link PoolClient#leave}), and their queued and running requests are summed from their own counts.
 * Thread-safe; non-blocking.
 */
final class LocalPools {

  private final String nodeId;
  private final PoolLoadBoard board;
  private final PoolClient client;
  private final Set<String> told = ConcurrentHashMap.newKeySet();

  LocalPools(String nodeId, PoolLoadBoard board, PoolClient client) {
    this.nodeId = nodeId;
    this.board = board;
    this.client = client;
  }

  private List<PoolLoad> mine() {
    return board.all().stream().filter(l -> l.nodeId().equals(nodeId)).toList();
  }

  /** Tells every pool of this node not told yet that the node is leaving; completes once they heard it. */
  CompletionStage<Void> leave() {
    List<CompletableFuture<Void>> calls = new ArrayList<>();
    for (PoolLoad l : mine()) {
      if (told.add(l.deployment() + "@" + l.version())) {
        calls.add(client.leave(l.deployment(), l.version(), nodeId).toCompletableFuture()
            .exceptionally(e -> null)); // a pool that went meanwhile has nothing left to drain
      }
    }
    return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new));
  }

  /** Tells pools that appeared since the last call to leave, then sums what all of them still hold. */
  CompletionStage<NodeDrain.Backlog> backlog() {
    return leave().thenCompose(v -> {
      List<CompletableFuture<PoolStats>> stats = mine().stream()
          .map(l -> client.stats(l.deployment(), l.version(), nodeId).toCompletableFuture()
              .exceptionally(e -> null))
          .toList();
      return CompletableFuture.allOf(stats.toArray(CompletableFuture[]::new)).thenApply(x -> {
        int queued = 0;
        int running = 0;
        for (CompletableFuture<PoolStats> s : stats) {
          PoolStats p = s.join();
          if (p != null) {
            queued += p.queueDepth();
            running += p.inFlightRequests();
          }
        }
        return new NodeDrain.Backlog(queued, running);
      });
    });
  }
}
