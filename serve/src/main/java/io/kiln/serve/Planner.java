package io.kiln.serve;

import io.kiln.pools.PoolNames;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.serve.impl.Capacity;
import io.kiln.serve.impl.Quantities;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Plans deployments onto a cluster view without touching the cluster: the dry run of {@code kiln deploy},
 * and the controller's picture of what each deployment should look like.
 *
 * <p>A deployment selects every node that is alive, carries all labels of its node selector and could
 * host at least one worker by its <em>total</em> resources. On each, it starts {@code workers_per_node}
 * workers, or {@code per_gpu} for each whole GPU of the node; with autoscaling, {@code min_workers}. A
 * cluster-wide {@code num_workers} is spread over the selected nodes instead ({@link #spread}): as evenly as
 * their total resources allow, the remainder to the first nodes by node id; a node left with none is skipped.
 * Fewer workers fitting in the node's total resources is a problem (they could never all start); fewer
 * fitting in what is available now is a warning (they wait for resources to free). Deployments are
 * planned in order, each seeing the resources the previous ones would take. A deployment no node of the view
 * could ever host, alive or not, says why and what a node would need ({@link Plan.NoFit}): it waits for another
 * node, not for resources to free.
 *
 * <p>A pure function of its inputs; stateless and thread-safe.
 */
public final class Planner {

  /** Plans {@code specs}, in order, onto {@code view}. */
  public Plan plan(List<DeploymentSpec> specs, ClusterView view) {
    List<NodeView> nodes = view.nodes().stream().sorted(Comparator.comparing(NodeView::nodeId)).toList();
    Map<String, TreeMap<String, Long>> remaining = new LinkedHashMap<>();
    Map<String, TreeMap<String, Long>> planned = new LinkedHashMap<>();
    Map<String, List<String>> placedHere = new LinkedHashMap<>();
    for (NodeView n : nodes) {
      remaining.put(n.nodeId(), Quantities.of(n.available()));
      planned.put(n.nodeId(), new TreeMap<>());
      placedHere.put(n.nodeId(), new ArrayList<>());
    }

    List<Plan.DeploymentPlan> plans = new ArrayList<>();
    // Nodes a deployment alone already overflows: the sum over deployments would only say it again.
    Set<String> overflowing = new HashSet<>();
    for (DeploymentSpec spec : specs) {
      Plan.DeploymentPlan p = planOne(spec, nodes, remaining);
      for (Plan.Placement placement : p.placements()) {
        TreeMap<String, Long> need = Quantities.times(spec.pool().workerResources(), placement.workers());
        Quantities.addTo(planned.get(placement.nodeId()), need);
        placedHere.get(placement.nodeId()).add(spec.id());
        if (placement.workers() > placement.fitsTotal()) {
          overflowing.add(placement.nodeId());
        }
      }
      plans.add(p);
    }

    List<Plan.NodeLoad> loads = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    for (NodeView n : nodes) {
      TreeMap<String, Long> sum = planned.get(n.nodeId());
      loads.add(new Plan.NodeLoad(n.nodeId(), n.address(), n.alive(), n.total(), n.available(),
          Quantities.asDoubles(sum), placedHere.get(n.nodeId())));
      TreeMap<String, Long> over = Quantities.excess(sum, Quantities.of(n.total()));
      if (!over.isEmpty() && !overflowing.contains(n.nodeId())) {
        problems.add(n.nodeId() + ": the deployments together need " + Quantities.format(Quantities.asDoubles(over))
            + ", more than the node's total " + n.total());
      }
    }
    return new Plan(plans, loads, problems);
  }

  private Plan.DeploymentPlan planOne(DeploymentSpec spec, List<NodeView> nodes,
                                      Map<String, TreeMap<String, Long>> remaining) {
    PoolPlacement pool = spec.pool();
    Resources perWorker = pool.workerResources();
    List<Plan.Placement> placements = new ArrayList<>();
    List<Plan.SkippedNode> skipped = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    List<String> warnings = new ArrayList<>();

    List<NodeView> selected = new ArrayList<>();
    for (NodeView node : nodes) {
      String reason = node.alive() ? Capacity.reason(pool, node) : "not alive";
      if (reason != null) {
        skipped.add(new Plan.SkippedNode(node.nodeId(), reason));
      } else {
        selected.add(node);
      }
    }
    Map<String, Integer> shares = pool.workers() instanceof PoolPlacement.Total t
        ? spread(t.count(), selected, perWorker, problems) : Map.of();

    for (NodeView node : selected) {
      int cap = pool.workers().on(node.total());
      if (pool.workers() instanceof PoolPlacement.Total t) {
        cap = shares.get(node.nodeId());
        if (cap == 0) {
          skipped.add(new Plan.SkippedNode(node.nodeId(), "num_workers " + t.count() + " spread over "
              + selected.size() + " nodes leaves none for this one"));
          continue;
        }
      }
      int workers = cap;
      int maxWorkers = cap;
      if (spec.autoscaling().isPresent()) {
        AutoscalingSpec a = spec.autoscaling().get();
        maxWorkers = Math.min(a.maxWorkers(), cap);
        workers = Math.min(a.minWorkers(), maxWorkers);
        if (a.minWorkers() > cap) {
          warnings.add(node.nodeId() + ": per_gpu allows " + cap + " workers here, fewer than min_workers "
              + a.minWorkers());
        }
      }
      TreeMap<String, Long> avail = remaining.get(node.nodeId());
      int fitsTotal = Quantities.fit(perWorker, Quantities.of(node.total()));
      int fitsAvailable = Quantities.fit(perWorker, avail);
      TreeMap<String, Long> need = Quantities.times(perWorker, workers);
      String each = "each needs " + perWorker;
      if (workers > fitsTotal) {
        problems.add(node.nodeId() + " can host " + fitsTotal + " of the " + workers + " workers asked ("
            + each + "; node total " + node.total() + ")");
      } else if (workers > fitsAvailable) {
        warnings.add(node.nodeId() + " has room for " + fitsAvailable + " of the " + workers
            + " workers now (" + each + "; available " + Quantities.format(Quantities.asDoubles(avail))
            + "); the rest wait for resources to free");
      }
      if (maxWorkers > fitsTotal && workers <= fitsTotal) {
        warnings.add(node.nodeId() + " can host " + fitsTotal + " workers; autoscaling up to " + maxWorkers
            + " stops there");
      }
      List<String> names = new ArrayList<>();
      for (int i = 0; i < workers; i++) {
        names.add(PoolNames.worker(spec.name(), spec.version(), node.nodeId(), i));
      }
      placements.add(new Plan.Placement(node.nodeId(), node.address(), workers, maxWorkers, fitsTotal, fitsAvailable,
          perWorker, Quantities.asDoubles(need), Quantities.asDoubles(avail),
          PoolNames.poolManager(spec.name(), spec.version(), node.nodeId()), names));
      remaining.put(node.nodeId(), Quantities.minusClamped(avail, need));
    }
    Plan.NoFit noFit = null;
    if (placements.isEmpty()) {
      long alive = nodes.stream().filter(NodeView::alive).count();
      problems.add(nodes.isEmpty() ? "no node selected: the cluster view has no nodes"
          : "no node selected: " + nodes.size() + " nodes known, " + alive + " alive, none qualifies"
              + " (see skipped)");
      noFit = Capacity.noFit(pool, nodes);
    }
    return new Plan.DeploymentPlan(spec.name(), spec.version(), placements, skipped, problems, warnings, noFit);
  }

  /**
   * Each selected node's share of a cluster-wide {@code num_workers}: as even as possible, the remainder one each to
   * the first nodes by node id; a node's share never exceeds what its total resources host, the excess going evenly
   * to the others. When the nodes together host fewer, each gets all it can and that is a problem.
   */
  static Map<String, Integer> spread(int total, List<NodeView> selected, Resources perWorker, List<String> problems) {
    Map<String, Integer> caps = new LinkedHashMap<>();
    selected.forEach(n -> caps.put(n.nodeId(), Math.min(PoolPlacement.MAX_WORKERS, fitsTotal(perWorker, n))));
    // Water-filling: a node holding no more than the even share of what is left is filled and drops out (smallest
    // first, so the share only grows); every node left then holds more than the even share, so base + 1 fits.
    List<String> bySize = selected.stream().map(NodeView::nodeId)
        .sorted(Comparator.comparing((String id) -> caps.get(id)).thenComparing(id -> id)).toList();
    Map<String, Integer> shares = new TreeMap<>();
    long left = total;
    int i = 0;
    for (; i < bySize.size(); i++) {
      String id = bySize.get(i);
      long r = bySize.size() - i;
      if ((long) caps.get(id) * r > left) {
        break;
      }
      shares.put(id, caps.get(id));
      left -= caps.get(id);
    }
    List<String> rest = bySize.subList(i, bySize.size()).stream().sorted().toList();
    if (!rest.isEmpty()) {
      long base = left / rest.size();
      long extra = left % rest.size();
      for (int k = 0; k < rest.size(); k++) {
        shares.put(rest.get(k), (int) (base + (k < extra ? 1 : 0)));
      }
      left = 0;
    }
    if (left > 0 && !selected.isEmpty()) {
      problems.add("num_workers " + total + ": the " + selected.size() + " selected nodes can host "
          + (total - left) + " workers together (each needs " + perWorker + ")");
    }
    return shares;
  }

  private static int fitsTotal(Resources perWorker, NodeView n) {
    return Quantities.fit(perWorker, Quantities.of(n.total()));
  }
}
