package io.kiln.serve.impl;

import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.serve.Plan;
import io.kiln.serve.PoolPlacement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Whether a node could ever host one worker of a pool: by its labels, its <em>total</em> resources and its whole
 * GPUs, whatever is reserved on it now. Where no node of the cluster could, a deployment is not waiting for
 * resources to free but for a different node ({@link Plan.NoFit}); the words the plan, the apply's refusal and the
 * controller's status use for it are made here. Pure functions.
 */
public final class Capacity {

  /** Nodes named in a reason; the rest are counted. */
  static final int NODES_NAMED = 3;

  private Capacity() {
  }

  /** Why {@code node} could never host one worker of {@code pool}, alive or not; null if it could. */
  public static String reason(PoolPlacement pool, NodeView node) {
    for (Map.Entry<String, String> want : new TreeMap<>(pool.nodeSelector()).entrySet()) {
      String has = node.labels().get(want.getKey());
      if (has == null) {
        return "no label " + want.getKey() + " (node_selector wants " + want.getKey() + "=" + want.getValue() + ")";
      }
      if (!has.equals(want.getValue())) {
        return "label " + want.getKey() + "=" + has + " (node_selector wants " + want.getKey() + "="
            + want.getValue() + ")";
      }
    }
    if (!pool.workerResources().fitsIn(node.total())) {
      return "cannot host one worker: each needs " + pool.workerResources() + ", node total " + node.total();
    }
    if (pool.workers().on(node.total()) == 0) {
      return "has no whole GPU for per_gpu";
    }
    return null;
  }

  /** Whether a node that could host a worker of {@code a} could host one of {@code b}, and the other way round. */
  public static boolean sameNeeds(PoolPlacement a, PoolPlacement b) {
    return a.workerResources().equals(b.workerResources()) && a.nodeSelector().equals(b.nodeSelector())
        && (a.workers() instanceof PoolPlacement.PerGpu) == (b.workers() instanceof PoolPlacement.PerGpu);
  }

  /** Why no node of {@code nodes} could ever host one worker, or null where one could or there is none. */
  public static Plan.NoFit noFit(PoolPlacement pool, List<NodeView> nodes) {
    List<Plan.SkippedNode> reasons = new ArrayList<>();
    for (NodeView n : nodes) {
      String why = reason(pool, n);
      if (why == null) {
        return null;
      }
      reasons.add(new Plan.SkippedNode(n.nodeId(), why));
    }
    return reasons.isEmpty() ? null : new Plan.NoFit(list(reasons), needs(pool));
  }

  /**
   * Why apply refuses a deployment no node of the cluster could ever host, what a node would need, and how to apply
   * it anyway (where such a node will join).
   */
  public static String refusal(Plan.DeploymentPlan d) {
    return "no node of this cluster can ever host a worker of " + d.id() + " (" + d.noFit().reason() + "); it needs "
        + d.noFit().needs() + ". If such a node will join, set pool.wait_for_capacity: true to"
        + " apply it now and wait for that node";
  }

  /**
   * The controller's message for a deployment that selects no node: why, and that it waits, for what. Starts with
   * {@code no node selected}.
   */
  public static String waiting(Plan.DeploymentPlan d) {
    if (d.noFit() != null) {
      return "no node selected: no node can host a worker (" + d.noFit().reason() + "); waiting for "
          + d.noFit().needs() + " to join";
    }
    if (d.skipped().isEmpty()) {
      return String.join("; ", d.problems()) + "; waiting for a node to join";
    }
    return "no node selected: " + list(d.skipped()) + "; waiting for a node that can host a worker to come back or"
        + " join";
  }

  /** What a node would need to host one worker, e.g. {@code a node with CPU ≥ 64, GPU ≥ 1 and label zone=x}. */
  static String needs(PoolPlacement pool) {
    List<String> parts = new ArrayList<>();
    Map<String, Long> units = new TreeMap<>(pool.workerResources().units());
    if (pool.workers() instanceof PoolPlacement.PerGpu) {
      units.merge(Resources.GPU, Resources.SCALE, Math::max); // a whole GPU, even for fractional workers
    }
    units.forEach((k, v) -> {
      if (v > 0) {
        parts.add(k + " \u2265 " + amount(v));
      }
    });
    List<String> labels = new TreeMap<>(pool.nodeSelector()).entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).toList();
    if (!labels.isEmpty()) {
      parts.add((labels.size() == 1 ? "label " : "labels ") + String.join(", ", labels));
    }
    if (parts.isEmpty()) {
      return "a node";
    }
    String last = parts.remove(parts.size() - 1);
    return "a node with " + (parts.isEmpty() ? last : String.join(", ", parts) + " and " + last);
  }

  private static String list(List<Plan.SkippedNode> nodes) {
    List<String> named = nodes.stream().limit(NODES_NAMED).map(s -> s.nodeId() + ": " + s.reason()).toList();
    int more = nodes.size() - named.size();
    return String.join("; ", named) + (more > 0 ? "; and " + more + " more node" + (more == 1 ? "" : "s") : "");
  }

  private static String amount(long units) {
    return units % Resources.SCALE == 0 ? Long.toString(units / Resources.SCALE)
        : Double.toString(units / (double) Resources.SCALE);
  }
}
