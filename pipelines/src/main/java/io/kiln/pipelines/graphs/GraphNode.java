package io.kiln.pipelines.graphs;

import java.util.Objects;

/**
 * One node that runs a pool of every deployment a graph's steps call, as those pools last reported their load: where
 * the graph's requests may run. The figures sum up the pools so that a router can treat the node's graph as one pool.
 *
 * @param ready whether every step's pool there is ready and none is draining
 * @param leaving whether a step's pool there is leaving with its node (ready and draining): it still serves
 * @param queueDepth the deepest queue among the step pools
 * @param inFlight requests executing in all the step pools together
 * @param capacity the smallest queue capacity among them: the node has room while {@code queueDepth < capacity}
 */
public record GraphNode(String nodeId, boolean ready, boolean leaving, int queueDepth, int inFlight, int capacity) {

  public GraphNode {
    Objects.requireNonNull(nodeId, "nodeId");
  }

  /** Whether the node's graph takes a request now (ready, or leaving but still serving). */
  public boolean serves() {
    return ready || leaving;
  }

  /** Outstanding requests in its step pools: what a router compares. */
  public long load() {
    return (long) queueDepth + inFlight;
  }
}
