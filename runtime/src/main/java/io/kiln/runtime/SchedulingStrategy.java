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
}
