package io.kiln.pools;

import java.util.List;

/**
 * A pool manager's full picture, for status pages and the controller: its load, its workers one by one,
 * and the configuration it runs. Encodable with the runtime's wire codec.
 *
 * @param deployment the deployment's name
 * @param version the deployment's version
 * @param nodeId the node the pool runs on
 * @param managerId the manager's actor id
 * @param ready whether at least one worker is in rotation and the pool accepts requests
 * @param draining whether {@link PoolManager#drain()} was called
 * @param targetWorkers the worker count the manager is working towards
 * @param config the pool's queueing and batching
 * @param stats the dispatcher's counts
 * @param workers every worker, including dead ones, by index
 * @param lastRepair the last time the manager's health checks restarted a stuck worker, and why; null if
 *     they never did
 */
public record PoolStatus(String deployment, String version, String nodeId, String managerId, boolean ready,
                         boolean draining, int targetWorkers, PoolConfig config, PoolStats stats,
                         List<WorkerStatus> workers, String lastRepair) {

  public PoolStatus {
    workers = List.copyOf(workers);
  }

  /** A status without repairs. */
  public PoolStatus(String deployment, String version, String nodeId, String managerId, boolean ready,
                    boolean draining, int targetWorkers, PoolConfig config, PoolStats stats, List<WorkerStatus> workers) {
    this(deployment, version, nodeId, managerId, ready, draining, targetWorkers, config, stats, workers, null);
  }

  /** Workers in the given state. */
  public long count(WorkerState state) {
    return workers.stream().filter(w -> w.state() == state).count();
  }
}
