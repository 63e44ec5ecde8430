package io.kiln.runtime;

import java.util.Objects;

/**
 * Where an actor or task may be placed. Placement is decided by a pure function over a {@link ClusterView}
 * (see {@code io.kiln.runtime.scheduling.Scheduler}); these values only say what is wanted.
 */
public sealed interface SchedulingStrategy {

  /**
   * Ray's hybrid policy: prefer the local node, pack onto nodes whose utilisation stays below 50 %, and
   * above that spread onto the least utilised node.
   */
  SchedulingStrategy DEFAULT = new Default();

  /** Spread placements across feasible nodes, least utilised first, rotating among equals. */
  SchedulingStrategy SPREAD = new Spread();

  static SchedulingStrategy nodeAffinity(String nodeId, boolean soft) {
    return new NodeAffinity(nodeId, soft);
  }

  /** Hard affinity: place on {@code nodeId} or fail (node dead, unknown or too small). */
  static SchedulingStrategy onNode(String nodeId) {
    return new NodeAffinity(nodeId, false);
  }

  /**
   * Place into bundle {@code bundleIndex} of {@code group} ({@code -1}: any bundle of it with room). The
   * actor or task takes its resources from the bundle's reservation, not from the node's free pool; a
   * request larger than the bundle fails with {@link InfeasibleResourcesException} naming the bundle, one
   * that fits but finds the bundle full waits (its placement timeout). While the group is PENDING or
   * RESCHEDULING requests wait for it.
   */
  static SchedulingStrategy placementGroup(PlacementGroup group, int bundleIndex) {
    return new InPlacementGroup(group.id(), bundleIndex);
  }

  record Default() implements SchedulingStrategy {
    @Override
    public String toString() {
      return "DEFAULT";
    }
  }

  record Spread() implements SchedulingStrategy {
    @Override
    public String toString() {
      return "SPREAD";
    }
  }

  /**
   * Place on one node. {@code soft = false}: only there, failing if it is dead or cannot ever fit the
   * request. {@code soft = true}: there if possible, otherwise as {@link #DEFAULT}.
   */
  record NodeAffinity(String nodeId, boolean soft) implements SchedulingStrategy {
    public NodeAffinity {
      Objects.requireNonNull(nodeId, "nodeId");
    }

    @Override
    public String toString() {
      return "NodeAffinity(" + nodeId + (soft ? ", soft)" : ", hard)");
    }
  }

  /**
   * Into a bundle of a placement group; see {@link SchedulingStrategy#placementGroup}.
   *
   * @param bundleIndex 0.. the group's bundle count - 1, or -1 for any bundle
   */
  record InPlacementGroup(String groupId, int bundleIndex) implements SchedulingStrategy {
    public InPlacementGroup {
      Objects.requireNonNull(groupId, "groupId");
      if (bundleIndex < -1) {
        throw new IllegalArgumentException("bundleIndex must be >= -1 (-1 = any bundle), got " + bundleIndex);
      }
    }

    @Override
    public String toString() {
      return "PlacementGroup(" + groupId + ", bundle " + (bundleIndex < 0 ? "any" : bundleIndex) + ")";
    }
  }
}
