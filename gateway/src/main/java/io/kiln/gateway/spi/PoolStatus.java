package io.kiln.gateway.spi;

import java.util.Objects;

/**
 * One node's pool of a deployment version as it last reported itself, for the control plane's APIs (the repository
 * extension, the dashboard): the pool's own words (a pool that is {@link #leaving} still reads ready here, where
 * {@link PoolEndpoint} routes it as not ready), a little stale, the pool itself authoritative.
 *
 * @param nodeId the node the pool runs on
 * @param ready whether the pool has a worker in rotation and accepts requests
 * @param draining whether the pool is draining: retired (not ready, it refuses new requests) or, while still ready,
 *     {@link #leaving} with its node
 * @param queueDepth requests waiting for a worker
 * @param inFlight requests being executed
 * @param capacity the most requests its queue holds
 * @param idleWorkers workers waiting for a batch
 * @param busyWorkers workers executing a batch
 */
public record PoolStatus(String nodeId, boolean ready, boolean draining, int queueDepth, int inFlight, int capacity,
                         int idleWorkers, int busyWorkers) {

  public PoolStatus {
    Objects.requireNonNull(nodeId, "nodeId");
    if (queueDepth < 0 || inFlight < 0 || capacity < 0 || idleWorkers < 0 || busyWorkers < 0) {
      throw new IllegalArgumentException("pool on node '" + nodeId + "': figures must be >= 0, got queueDepth="
          + queueDepth + " inFlight=" + inFlight + " capacity=" + capacity + " idleWorkers=" + idleWorkers
          + " busyWorkers=" + busyWorkers);
    }
  }

  /** Whether the pool's node is leaving the cluster: ready and draining at once. */
  public boolean leaving() {
    return ready && draining;
  }

  /** Outstanding requests: queued plus executing. */
  public long load() {
    return (long) queueDepth + inFlight;
  }
}
