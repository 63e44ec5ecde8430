package io.kiln.runtime.scheduling;

import java.util.List;
import java.util.Objects;

/**
 * The outcome of {@link Scheduler#place}: where to try, to wait, or to give up. Immutable.
 */
public sealed interface Placement {

  /**
   * Nodes to try, best first. The caller asks each node's agent in turn to reserve the resources and
   * spills back to the next one when an agent refuses (its ledger is the authority; the view the
   * scheduler saw may be stale, or GPU fragmentation may prevent the reservation). When all refuse,
   * the caller treats the request as {@link Pending}.
   *
   * @param nodeIds non-empty, no particular size limit (at most one entry per alive node)
   */
  record Ranked(List<String> nodeIds) implements Placement {
    public Ranked {
      nodeIds = List.copyOf(nodeIds);
      if (nodeIds.isEmpty()) {
        throw new IllegalArgumentException("a ranked placement needs at least one node");
      }
    }

    /** The preferred node. */
    public String first() {
      return nodeIds.get(0);
    }
  }

  /**
   * Some alive node could hold the request in total but none has it available now. The caller queues
   * the request (FIFO, with its timeout) and places it again when resources are released or nodes join.
   *
   * @param reason human-readable, states what was needed
   */
  record Pending(String reason) implements Placement {
    public Pending {
      Objects.requireNonNull(reason, "reason");
    }
  }

  /**
   * The request can never be placed as asked (no alive node is large enough, the affinity node is dead
   * or unknown). The caller fails it at once with this reason.
   *
   * @param reason human-readable, states the numbers, e.g.
   *     {@code needs {GPU: 4}, largest alive node n2 has {CPU: 8, GPU: 2}}
   */
  record Infeasible(String reason) implements Placement {
    public Infeasible {
      Objects.requireNonNull(reason, "reason");
    }
  }
}
