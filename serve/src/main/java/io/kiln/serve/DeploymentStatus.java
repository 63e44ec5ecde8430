package io.kiln.serve;

import java.util.List;

/**
 * What the controller last observed of one deployment, as {@code kiln status} shows it. Written by the
 * leader's controller into {@code kiln.deployment-status} when it changes (and at least every few seconds
 * while the leader lives); readable on every node.
 *
 * @param name the deployment
 * @param version the desired (target) version
 * @param servingVersion the version the gateway routes to: the desired one once it is ready on a node, but
 *     during a rolling update the old one until the new one is ready on every selected node; null while no
 *     version has a ready pool
 * @param phase where the deployment stands
 * @param message why, in a sentence
 * @param generation the desired state's generation this status reflects
 * @param pools one entry per pool (node and version) the controller knows, selected nodes in node order first
 * @param lastScaling the autoscaler's last decision (or the change it waits to make) with its reason, or null
 * @param failure why the desired version could not start (the model's load error), set in phase FAILED
 * @param lastHealth the last repair its pools' health checks made (which worker, why), or null
 * @param updatedAtMillis when the controller wrote this, on its clock
 */
public record DeploymentStatus(String name, String version, String servingVersion, Phase phase, String message,
                               long generation, List<PoolState> pools, String lastScaling, String failure,
                               String lastHealth, long updatedAtMillis) {

  public DeploymentStatus {
    pools = pools == null ? List.of() : List.copyOf(pools);
  }

  /** This status written at another time. */
  public DeploymentStatus at(long millis) {
    return new DeploymentStatus(name, version, servingVersion, phase, message, generation, pools, lastScaling, failure,
        lastHealth, millis);
  }

  /** Lifecycle of a deployment. */
  public enum Phase {
    /**
     * The desired version is being created and warmed; it already serves on the nodes where it is ready
     * (see {@code servingVersion}), if any.
     */
    DEPLOYING,
    /** The desired version serves on every selected node. */
    READY,
    /** A new version is warming while the old one keeps serving; traffic moves once it is ready everywhere. */
    ROLLING,
    /** The desired version could not start ({@code failure} says why); an older version, if any, keeps serving. */
    FAILED,
    /** Deleted: pools are draining (queued requests finish), then the deployment is removed. */
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
   * @param workers live workers (idle or busy)
   * @param targetWorkers the worker count the controller wants there (autoscaled; never more than fit the node)
   * @param queueDepth queued requests
   * @param inFlight executing requests
   */
  public record PoolState(String node, String version, boolean ready, int workers, int targetWorkers, int queueDepth,
                          int inFlight) {
  }
}
