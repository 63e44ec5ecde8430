package io.kiln.runtime.scheduling;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.SchedulingStrategy.NodeAffinity;
import io.kiln.runtime.SchedulingStrategy.Spread;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Kiln's placement policy, Ray's semantics made explicit: a pure, deterministic function of a
 * {@link PlacementRequest} and a {@link ClusterView}. It keeps no state, never blocks and is safe to
 * call from any thread; the same inputs always give the same {@link Placement}. Only alive nodes count.
 * Utilisation is {@link NodeView#utilisationAfter}: the highest fraction used over the node's resources.
 *
 * <ul>
 *   <li><b>DEFAULT</b> (Ray's hybrid policy). Candidates are the alive nodes whose available resources
 *       fit the request. First come the nodes that stay below {@link #SPREAD_THRESHOLD} utilisation
 *       after placing, the local node first and then by node id (pack); then the others by utilisation
 *       after placing, ascending, ties by node id (spread). Zero-resource requests follow the same rule,
 *       so they go to the local node while it is not busy, never to a random one.
 *   <li><b>SPREAD</b>. Candidates as above, by current utilisation ascending; ties are broken by the
 *       node-id order rotated by {@link PlacementRequest#sequence()}, so zero-resource placements with
 *       sequence 0, 1, 2, ... go round-robin over the nodes.
 *   <li><b>NodeAffinity, hard</b>. Unknown or dead node, or a node whose total can never hold the
 *       request: {@link Placement.Infeasible}. Not available now: {@link Placement.Pending}. Otherwise
 *       that node alone.
 *   <li><b>NodeAffinity, soft</b>. If the node is alive and has the request available: that node, then
 *       the DEFAULT ranking of the others. Otherwise exactly the DEFAULT result.
 * </ul>
 *
 * <p>When no alive node has the request available: {@link Placement.Pending} if some alive node's total
 * could hold it, else {@link Placement.Infeasible} naming the closest node's total. No alive node at
 * all is infeasible.
 *
 * <p>GPU fragmentation: the view holds one summed GPU quantity per node, so a node showing
 * {@code GPU: 1} available may have it as two half-free devices. Its ledger then refuses a whole-GPU
 * request and the caller spills back to the next ranked node; the scheduler cannot see this.
 */
public final class Scheduler {

  /** DEFAULT packs onto nodes whose utilisation after placing stays below this, and spreads above it. */
  public static final double SPREAD_THRESHOLD = 0.5;

  private Scheduler() {}

  public static Placement place(PlacementRequest request, ClusterView view) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(view, "view");
    Resources need = request.resources();
    List<NodeView> alive = view.aliveNodes();
    SchedulingStrategy strategy = request.strategy();
    if (strategy instanceof SchedulingStrategy.InPlacementGroup) {
      return new Placement.Infeasible("a placement into a placement group is decided by the group's bundle table "
          + "(BundleScheduler.placeInBundle), not over the node table");
    }
    if (strategy instanceof NodeAffinity affinity) {
      return affinity.soft() ? softAffinity(need, affinity.nodeId(), view, alive)
          : hardAffinity(need, affinity.nodeId(), view.node(affinity.nodeId()));
    }
    List<String> ranked = strategy instanceof Spread
        ? spreadRanking(need, alive, request.sequence())
        : hybridRanking(need, view.localNodeId(), alive);
    return ranked.isEmpty() ? noCandidate(need, alive) : new Placement.Ranked(ranked);
  }

  private static List<String> hybridRanking(Resources need, String localNodeId, List<NodeView> nodes) {
    List<NodeView> pack = new ArrayList<>();
    List<Scored> spread = new ArrayList<>();
    for (NodeView n : nodes) {
      if (!need.fitsIn(n.available())) {
        continue;
      }
      double after = n.utilisationAfter(need);
      if (after < SPREAD_THRESHOLD) {
        pack.add(n);
      } else {
        spread.add(new Scored(n.nodeId(), after, 0));
      }
    }
    pack.sort(Comparator.comparing((NodeView n) -> !n.nodeId().equals(localNodeId)).thenComparing(NodeView::nodeId));
    spread.sort(Comparator.comparingDouble(Scored::utilisation).thenComparing(Scored::nodeId));
    List<String> ranked = new ArrayList<>(pack.size() + spread.size());
    pack.forEach(n -> ranked.add(n.nodeId()));
    spread.forEach(s -> ranked.add(s.nodeId()));
    return ranked;
  }

  private static List<String> spreadRanking(Resources need, List<NodeView> alive, long sequence) {
    if (alive.isEmpty()) {
      return List.of();
    }
    // Rotate over all alive nodes, not just the fitting ones, so a node's turn does not shift when
    // others fill up.
    List<NodeView> byId = new ArrayList<>(alive);
    byId.sort(Comparator.comparing(NodeView::nodeId));
    int offset = (int) Math.floorMod(sequence, (long) byId.size());
    List<Scored> candidates = new ArrayList<>();
    for (int i = 0; i < byId.size(); i++) {
      NodeView n = byId.get((offset + i) % byId.size());
      if (need.fitsIn(n.available())) {
        candidates.add(new Scored(n.nodeId(), n.utilisation(), i));
      }
    }
    candidates.sort(Comparator.comparingDouble(Scored::utilisation).thenComparingInt(Scored::turn));
    return candidates.stream().map(Scored::nodeId).toList();
  }

  /** Hard affinity given the node's row, if the view has one ({@link PlacementIndex} shares it). */
  static Placement hardAffinity(Resources need, String nodeId, Optional<NodeView> found) {
    if (found.isEmpty()) {
      return new Placement.Infeasible("unknown node " + nodeId);
    }
    NodeView node = found.get();
    if (!node.alive()) {
      return new Placement.Infeasible("node " + nodeId + " is dead");
    }
    if (!need.fitsIn(node.total())) {
      return new Placement.Infeasible("needs " + need + ", node " + nodeId + " has " + node.total() + " in total");
    }
    if (!need.fitsIn(node.available())) {
      return new Placement.Pending("needs " + need + ", node " + nodeId + " has " + node.available() + " available now");
    }
    return new Placement.Ranked(List.of(nodeId));
  }

  private static Placement softAffinity(Resources need, String nodeId, ClusterView view, List<NodeView> alive) {
    boolean fitsThere = view.node(nodeId).filter(NodeView::alive).filter(n -> need.fitsIn(n.available())).isPresent();
    if (!fitsThere) {
      return place(PlacementRequest.of(need, SchedulingStrategy.DEFAULT), view);
    }
    List<NodeView> others = alive.stream().filter(n -> !n.nodeId().equals(nodeId)).toList();
    List<String> ranked = new ArrayList<>();
    ranked.add(nodeId);
    ranked.addAll(hybridRanking(need, view.localNodeId(), others));
    return new Placement.Ranked(ranked);
  }

  private static Placement noCandidate(Resources need, List<NodeView> alive) {
    if (alive.isEmpty()) {
      return noAliveNodes(need);
    }
    long couldFit = alive.stream().filter(n -> need.fitsIn(n.total())).count();
    if (couldFit > 0) {
      return pending(need, couldFit, alive.size());
    }
    NodeView closest = alive.stream()
        .max(Comparator.comparingDouble((NodeView n) -> coverage(need, n.total()))
            .thenComparing(NodeView::nodeId, Comparator.reverseOrder()))
        .orElseThrow();
    return infeasible(need, closest);
  }

  static Placement.Infeasible noAliveNodes(Resources need) {
    return new Placement.Infeasible("needs " + need + ", no alive nodes");
  }

  static Placement.Pending pending(Resources need, long couldFit, int alive) {
    return new Placement.Pending("needs " + need + ", " + couldFit + " of " + alive
        + " alive nodes could hold it but none has it available now");
  }

  static Placement.Infeasible infeasible(Resources need, NodeView closest) {
    return new Placement.Infeasible("needs " + need + ", largest alive node " + closest.nodeId()
        + " has " + closest.total());
  }

  /** How much of {@code need} {@code total} covers, summed per requested key (each capped at 1). */
  static double coverage(Resources need, Resources total) {
    double sum = 0;
    for (Map.Entry<String, Long> e : need.units().entrySet()) {
      sum += Math.min(1.0, total.unitsOf(e.getKey()) / (double) e.getValue());
    }
    return sum;
  }

  /** A candidate with its sort keys; {@code turn} is its place in SPREAD's rotated id order. */
  private record Scored(String nodeId, double utilisation, int turn) {}
}
