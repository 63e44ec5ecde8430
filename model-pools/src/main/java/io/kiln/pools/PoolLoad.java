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
 * @param models the models a multiplexed pool holds loaded (at most {@value #MAX_MODELS} of them); empty otherwise
 */
public record PoolLoad(String deployment, String version, String nodeId, String managerId, boolean ready,
                       boolean draining, int queueDepth, int inFlight, int capacity, int idleWorkers, int busyWorkers,
                       int totalWorkers, Duration age, java.util.List<String> models) {

  /** The most model names one report carries: a router's preference needs no more, and reports stay small. */
  public static final int MAX_MODELS = 64;

  public PoolLoad {
    models = models == null ? java.util.List.of()
        : java.util.List.copyOf(models.size() > MAX_MODELS ? models.subList(0, MAX_MODELS) : models);
  }

  /** A report of a pool of one model. */
  public PoolLoad(String deployment, String version, String nodeId, String managerId, boolean ready, boolean draining,
                  int queueDepth, int inFlight, int capacity, int idleWorkers, int busyWorkers, int totalWorkers,
                  Duration age) {
    this(deployment, version, nodeId, managerId, ready, draining, queueDepth, inFlight, capacity, idleWorkers,
        busyWorkers, totalWorkers, age, java.util.List.of());
  }

  /** Whether the pool holds {@code model} loaded (a multiplexed pool's report). */
  public boolean holds(String model) {
    return models.contains(model);
  }

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
