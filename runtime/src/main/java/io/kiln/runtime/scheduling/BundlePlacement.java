package io.kiln.runtime.scheduling;

import java.util.List;
import java.util.Objects;

/** The outcome of {@link BundleScheduler#place}: a node for every bundle, or why not. Immutable. */
public sealed interface BundlePlacement {

  /**
   * A node for every bundle, by index (kept bundles keep theirs). The caller reserves them all or none
   * (prepare on every node, then commit); the nodes' ledgers are the authority and may still refuse.
   */
  record Assigned(List<String> nodeIds) implements BundlePlacement {
    public Assigned {
      nodeIds = List.copyOf(nodeIds);
    }
  }

  /** The alive nodes could hold the group in total but not with what is available now: retry later. */
  record Pending(String reason) implements BundlePlacement {
    public Pending {
      Objects.requireNonNull(reason, "reason");
    }
  }

  /**
   * The alive nodes could not hold the group even idle (a bundle larger than every node, fewer nodes than
   * a STRICT_SPREAD group has bundles). A group waits for nodes to join anyway (Ray's behaviour); the
   * reason names the bundle or the numbers.
   */
  record Infeasible(String reason) implements BundlePlacement {
    public Infeasible {
      Objects.requireNonNull(reason, "reason");
    }
  }
}
