package io.kiln.pools;

import java.time.Duration;

/**
 * One node's pool of a deployment version as it last reported its load on the load board: fresh enough to
 * route by (reports come every ~100 ms and on big changes), but the pool itself stays authoritative and may
 * still refuse a request with a {@link CapacityExceededException}.
 *
 * @param deployment the deployment's name
 * @param version the deployment's version
 * @param nodeId the node the pool runs on
 * @param managerId the reporting manager's actor id
 * @param ready whether the pool has a worker in rotation and accepts requests
 * @param draining whether the pool is draining: retired ({@link PoolManager#drain}: not ready, it refuses new
 *     requests) or, while still ready, {@link #leaving()} with its node
 * @param queueDepth requests waiting for a worker
 * @param inFlight requests being executed
 * @param capacity the most requests its queue holds
 * @param idleWorkers workers waiting for a batch
 * @param busyWorkers workers executing a batch
 * @param totalWorkers workers in the pool, failed ones included
 * @param age how long ago this report arrived, on the board's clock
 */
public record PoolLoad(String deployment, String version, String nodeId, String managerId, boolean ready,
                       boolean draining, int queueDepth, int inFlight, int capacity, int idleWorkers, int busyWorkers,
                       int totalWorkers, Duration age) {

  /** Whether the queue has room for another request. */
  public boolean hasRoom() {
    return queueDepth < capacity;
  }

  /**
   * Whether the pool's node is leaving the cluster ({@link PoolManager#leave}): ready and draining at once. It
   * still serves what reaches it, but routers send it work only when no other pool can take it.
   */
  public boolean leaving() {
    return ready && draining;
  }

  /** Outstanding requests: queued plus executing (what power-of-two-choices compares). */
  public long load() {
    return (long) queueDepth + inFlight;
  }
}
