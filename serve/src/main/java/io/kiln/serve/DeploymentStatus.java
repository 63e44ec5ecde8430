package io.kiln.serve;

import java.util.List;

/**
 * What the controller last observed of one deployment, as {@code kiln status} shows it. Written by the
 * leader's controller into {@code kiln.deployment-status}; readable on every node.
 *
 * @param name the deployment
 * @param version the desired (target) version
 * @param servingVersion the version the gateway routes to (during a rolling update, the old one until the
 *     new one is ready everywhere); null while nothing is ready yet
 * @param phase where the deployment stands
 * @param message why, in a sentence (e.g. the model load error of a failed version)
 * @param generation the desired state's generation this status reflects
 * @param pools one entry per pool (node and version) the controller knows
 * @param lastScaling the autoscaler's last decision and its reason, or null
 * @param updatedAtMillis when the controller wrote this
 */
public record DeploymentStatus(String name, String version, String servingVersion, Phase phase, String message,
                               long generation, List<PoolState> pools, String lastScaling, long updatedAtMillis) {

  public DeploymentStatus {
    pools = pools == null ? List.of() : List.copyOf(pools);
  }

  /** Lifecycle of a deployment. */
  public enum Phase {
    /** Pools are being created and warmed; nothing serves yet. */
    DEPLOYING,
    /** Every selected node serves the desired version. */
    READY,
    /** A new version is warming while the old one keeps serving. */
    ROLLING,
    /** The desired version could not start (the message says why); an older version, if any, keeps serving. */
    FAILED,
    /** Pools are draining before removal. */
    DELETING,
    /** No node can host a worker (see the message). */
    UNSCHEDULABLE
  }

  /**
   * One pool as last seen.
   *
   * @param node the node hosting it
   * @param version the deployment version it serves
   * @param ready whether it takes requests
   * @param workers live workers
   * @param targetWorkers the worker count the controller wants there (autoscaled)
   * @param queueDepth queued requests
   * @param inFlight executing requests
   */
  public record PoolState(String node, String version, boolean ready, int workers, int targetWorkers, int queueDepth,
                          int inFlight) {
  }
}
