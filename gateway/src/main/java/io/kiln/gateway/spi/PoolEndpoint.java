package io.kiln.gateway.spi;

import java.util.Objects;

/**
 * One node's pool for a model version, with its load as last reported. Load figures may be a little
 * stale; the pool itself is authoritative and may still refuse with a capacity error.
 *
 * @param nodeId the node the pool runs on
 * @param local whether that node is the one this gateway runs on
 * @param ready whether the pool has at least one warm worker
 * @param queueDepth requests waiting in the pool's queue
 * @param inFlight requests being executed by its workers
 * @param capacity the most requests its queue holds; the pool has room while {@code queueDepth < capacity}
 */
public record PoolEndpoint(String nodeId, boolean local, boolean ready, int queueDepth, int inFlight, int capacity) {

  public PoolEndpoint {
    Objects.requireNonNull(nodeId, "nodeId");
    if (queueDepth < 0 || inFlight < 0 || capacity < 0) {
      throw new IllegalArgumentException("pool on node '" + nodeId + "': load figures must be >= 0, got queueDepth="
          + queueDepth + " inFlight=" + inFlight + " capacity=" + capacity);
    }
  }

  /** Whether the queue has room for another request. */
  public boolean hasRoom() {
    return queueDepth < capacity;
  }

  /** The load figure power-of-two-choices compares. */
  public long load() {
    return (long) queueDepth + inFlight;
  }
}
