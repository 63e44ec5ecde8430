package io.kiln.runtime.scheduling;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.PlacementGroupState;
import io.kiln.runtime.PlacementGroupStrategy;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Placement of a placement group's bundles: a pure, deterministic function of a {@link BundleRequest} and a
 * {@link ClusterView}, beside {@link Scheduler}. It keeps no state, never blocks and is safe from any thread.
 * Only alive nodes count; a bundle fits a node when it fits the node's available resources, less what
 * bundles placed earlier in the same call took. All or nothing: either every bundle gets a node or none does.
 *
 * <ul>
 *   <li><b>STRICT_PACK</b>: every bundle on one node, the least utilised after placing that fits their sum
 *       (ties by id). Kept bundles pin the node.
 *   <li><b>PACK</b>: as STRICT_PACK when one node fits them all; otherwise, largest bundle first, each onto
 *       the first node the group already uses that fits it, else onto the fitting node with most room.
 *   <li><b>STRICT_SPREAD</b>: each bundle on a different node, none on a node that holds a kept bundle: a
 *       maximum bipartite matching (augmenting paths) of bundles to fitting nodes, preferring least utilised
 *       nodes, so a placement is found whenever one exists (a greedy pass can miss it).
 *   <li><b>SPREAD</b>: as STRICT_SPREAD when it succeeds; otherwise, largest bundle first, onto the fitting
 *       node holding fewest of the group's bundles, then least utilised after placing, then id.
 * </ul>
 *
 * <p>When no placement exists with what is available, the same policy is run over the alive nodes' totals:
 * if the idle cluster could hold the group the result is {@link BundlePlacement.Pending}, otherwise
 * {@link BundlePlacement.Infeasible}, naming the bundle that fits no node where one does not.
 */
public final class BundleScheduler {

  private BundleScheduler() {
  }

  public static BundlePlacement place(BundleRequest request, ClusterView view) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(view, "view");
    List<NodeView> alive = new ArrayList<>(view.aliveNodes());
    alive.sort(Comparator.comparing(NodeView::nodeId));
    Set<String> aliveIds = new HashSet<>();
    alive.forEach(n -> aliveIds.add(n.nodeId()));
    String[] assign = new String[request.bundles().size()];
    List<Integer> todo = new ArrayList<>();
    for (int i = 0; i < assign.length; i++) {
      String k = request.kept().get(i);
      if (k != null && aliveIds.contains(k)) {
        assign[i] = k;
      } else {
        todo.add(i);
      }
    }
    if (todo.isEmpty()) {
      return new BundlePlacement.Assigned(List.of(assign));
    }
    if (alive.isEmpty()) {
      return new BundlePlacement.Infeasible("no alive nodes");
    }
    for (int i : todo) {
      Resources b = request.bundles().get(i);
      if (alive.stream().noneMatch(n -> b.fitsIn(n.total()))) {
        NodeView closest = alive.stream()
            .max(Comparator.comparingDouble((NodeView n) -> Scheduler.coverage(b, n.total()))
                .thenComparing(NodeView::nodeId, Comparator.reverseOrder())).orElseThrow();
        return new BundlePlacement.Infeasible("bundle " + i + " " + b + " fits no alive node; largest alive node "
            + closest.nodeId() + " has " + closest.total());
      }
    }
    todo.sort(Comparator.comparingLong((Integer i) -> -request.bundles().get(i).unitsOf(Resources.GPU))
        .thenComparingLong(i -> -request.bundles().get(i).unitsOf(Resources.CPU)).thenComparingInt(i -> i));
    Map<String, Resources> available = new LinkedHashMap<>();
    Map<String, Resources> totals = new LinkedHashMap<>();
    for (NodeView n : alive) {
      available.put(n.nodeId(), n.available());
      totals.put(n.nodeId(), n.total());
    }
    Attempt now = new Attempt(request, alive, available, assign.clone(), todo);
    if (now.solve()) {
      return new BundlePlacement.Assigned(List.of(now.assign));
    }
    Attempt idle = new Attempt(request, alive, totals, assign.clone(), todo);
    Resources sum = Resources.NONE;
    for (int i : todo) {
      sum = sum.plus(request.bundles().get(i));
    }
    if (idle.solve()) {
      return new BundlePlacement.Pending(request.strategy() + " needs " + sum + " for " + todo.size()
          + " bundles; the alive nodes could hold them but not with what is available now");
    }
    return new BundlePlacement.Infeasible(switch (request.strategy()) {
      case STRICT_PACK -> "STRICT_PACK needs " + sum + " on one node, largest alive node " + largest(sum, alive)
          + (idle.keptNodes().size() > 1 ? " (kept bundles are on several nodes)" : "");
      case STRICT_SPREAD -> "STRICT_SPREAD needs " + todo.size() + " distinct nodes"
          + (idle.keptNodes().isEmpty() ? "" : " besides the " + idle.keptNodes().size() + " holding kept bundles")
          + ", only " + idle.matched + " of " + alive.size() + " alive nodes could hold them";
      default -> request.strategy() + " needs " + sum + " for " + todo.size()
          + " bundles, more than the alive nodes hold together";
    });
  }

  /**
   * Placement of an actor or task into a group's bundle: the node holding bundle {@code bundleIndex} (for -1,
   * the nodes holding a bundle large enough, in bundle order). A request larger than the bundle (every
   * bundle, for -1), an index out of range, or a group REMOVED or FAILED is {@link Placement.Infeasible};
   * a bundle not placed now (group PENDING, or RESCHEDULING that bundle) is {@link Placement.Pending}. The
   * node's bundle ledger is the authority on room left; it refuses when the bundle is full and the caller
   * waits. Pure, like {@link #place}.
   *
   * @param bundleNodes the node of each bundle, null where not placed
   */
  public static Placement placeInBundle(Resources need, int bundleIndex, String group, PlacementGroupState state,
                                        List<Resources> bundles, List<String> bundleNodes) {
    if (state.terminal()) {
      return new Placement.Infeasible("placement group " + group + " is " + state);
    }
    if (bundleIndex >= bundles.size()) {
      return new Placement.Infeasible("placement group " + group + " has " + bundles.size() + " bundles, no bundle "
          + bundleIndex);
    }
    if (bundleIndex >= 0) {
      Resources b = bundles.get(bundleIndex);
      if (!need.fitsIn(b)) {
        return new Placement.Infeasible("needs " + need + ", bundle " + bundleIndex + " of placement group " + group
            + " reserves " + b);
      }
      String node = bundleNodes.get(bundleIndex);
      return node == null ? new Placement.Pending("bundle " + bundleIndex + " of placement group " + group
          + " is not placed yet (" + state + ")") : new Placement.Ranked(List.of(node));
    }
    LinkedHashSet<String> nodes = new LinkedHashSet<>();
    boolean anyFits = false;
    for (int i = 0; i < bundles.size(); i++) {
      if (need.fitsIn(bundles.get(i))) {
        anyFits = true;
        if (bundleNodes.get(i) != null) {
          nodes.add(bundleNodes.get(i));
        }
      }
    }
    if (!anyFits) {
      return new Placement.Infeasible("needs " + need + ", no bundle of placement group " + group
          + " is that large (bundles " + bundles + ")");
    }
    return nodes.isEmpty() ? new Placement.Pending("no bundle of placement group " + group + " large enough is placed yet ("
        + state + ")") : new Placement.Ranked(new ArrayList<>(nodes));
  }

  private static String largest(Resources need, List<NodeView> alive) {
    NodeView n = alive.stream().max(Comparator.comparingDouble((NodeView v) -> Scheduler.coverage(need, v.total()))
        .thenComparing(NodeView::nodeId, Comparator.reverseOrder())).orElseThrow();
    return n.nodeId() + " has " + n.total();
  }

  /** One run of the policy over one capacity table (available now, or totals). Mutates its own copies. */
  private static final class Attempt {
    final BundleRequest request;
    final List<NodeView> nodes;
    final Map<String, NodeView> byId = new HashMap<>();
    final Map<String, Resources> capacity;
    final String[] assign;
    final List<Integer> todo;
    int matched;

    Attempt(BundleRequest request, List<NodeView> nodes, Map<String, Resources> capacity, String[] assign,
            List<Integer> todo) {
      this.request = request;
      this.nodes = nodes;
      nodes.forEach(n -> byId.put(n.nodeId(), n));
      this.capacity = new LinkedHashMap<>(capacity);
      this.assign = assign;
      this.todo = todo;
    }

    Resources bundle(int i) {
      return request.bundles().get(i);
    }

    Set<String> keptNodes() {
      Set<String> out = new LinkedHashSet<>();
      for (int i = 0; i < assign.length; i++) {
        if (assign[i] != null && !todo.contains(i)) {
          out.add(assign[i]);
        }
      }
      return out;
    }

    boolean solve() {
      return switch (request.strategy()) {
        case STRICT_PACK -> strictPack();
        case PACK -> strictPack() || pack();
        case STRICT_SPREAD -> strictSpread();
        case SPREAD -> strictSpread() || spread();
      };
    }

    /** Utilisation of {@code nodeId} after also taking {@code extra} from its capacity here. */
    double utilisationAfter(String nodeId, Resources extra) {
      NodeView n = byId.get(nodeId);
      return new NodeView(nodeId, "", n.total(), capacity.get(nodeId), null, true).utilisationAfter(extra);
    }

    /** Least utilised after placing {@code need} first, then by id; each node scored once per call. */
    Comparator<String> leastUtilisedAfter(Resources need) {
      Map<String, Double> score = new HashMap<>();
      return Comparator.comparingDouble((String id) -> score.computeIfAbsent(id, k -> utilisationAfter(k, need)))
          .thenComparing(id -> id);
    }

    void take(int i, String nodeId) {
      assign[i] = nodeId;
      capacity.put(nodeId, capacity.get(nodeId).minus(bundle(i)));
    }

    boolean strictPack() {
      Resources sum = Resources.NONE;
      for (int i : todo) {
        sum = sum.plus(bundle(i));
      }
      Set<String> kept = keptNodes();
      if (kept.size() > 1) {
        return false;
      }
      Resources need = sum;
      List<String> candidates = kept.isEmpty() ? new ArrayList<>(capacity.keySet()) : new ArrayList<>(kept);
      String best = candidates.stream().filter(id -> need.fitsIn(capacity.get(id)))
          .min(leastUtilisedAfter(need)).orElse(null);
      if (best == null) {
        return false;
      }
      todo.forEach(i -> take(i, best));
      return true;
    }

    boolean pack() {
      List<String> used = new ArrayList<>(keptNodes());
      for (int i : todo) {
        Resources b = bundle(i);
        String node = used.stream().filter(id -> b.fitsIn(capacity.get(id))).findFirst()
            .orElseGet(() -> capacity.keySet().stream().filter(id -> !used.contains(id) && b.fitsIn(capacity.get(id)))
                .min(leastUtilisedAfter(b)).orElse(null));
        if (node == null) {
          return false;
        }
        if (!used.contains(node)) {
          used.add(node);
        }
        take(i, node);
      }
      return true;
    }

    boolean strictSpread() {
      Set<String> excluded = keptNodes();
      Map<Integer, List<String>> candidates = new HashMap<>();
      Map<Resources, List<String>> byShape = new HashMap<>(); // a group's bundles are mostly alike
      for (int i : todo) {
        Resources b = bundle(i);
        candidates.put(i, byShape.computeIfAbsent(b, x -> capacity.keySet().stream()
            .filter(id -> !excluded.contains(id) && b.fitsIn(capacity.get(id))).sorted(leastUtilisedAfter(b)).toList()));
      }
      Map<String, Integer> holder = new HashMap<>();
      Map<Resources, Integer> nextFree = new HashMap<>();
      matched = 0;
      for (int i : todo) {
        // The first free candidate when there is one (most of the time), an augmenting path otherwise.
        List<String> mine = candidates.get(i);
        int from = nextFree.getOrDefault(bundle(i), 0);
        while (from < mine.size() && holder.containsKey(mine.get(from))) {
          from++;
        }
        nextFree.put(bundle(i), from);
        if (from < mine.size()) {
          holder.put(mine.get(from), i);
          matched++;
        } else if (augment(i, candidates, holder, new HashSet<>())) {
          matched++;
        }
      }
      if (matched < todo.size()) {
        return false;
      }
      holder.forEach((node, i) -> take(i, node));
      return true;
    }

    /** Kuhn's augmenting path: gives bundle {@code i} a node, moving earlier bundles along if need be. */
    private static boolean augment(int i, Map<Integer, List<String>> candidates, Map<String, Integer> holder,
                                   Set<String> visited) {
      for (String node : candidates.get(i)) {
        if (visited.add(node)) {
          Integer other = holder.get(node);
          if (other == null || augment(other, candidates, holder, visited)) {
            holder.put(node, i);
            return true;
          }
        }
      }
      return false;
    }

    boolean spread() {
      Map<String, Integer> count = new HashMap<>();
      for (int i = 0; i < assign.length; i++) {
        if (assign[i] != null && !todo.contains(i)) {
          count.merge(assign[i], 1, Integer::sum);
        }
      }
      for (int i : todo) {
        Resources b = bundle(i);
        String node = capacity.keySet().stream().filter(id -> b.fitsIn(capacity.get(id)))
            .min(Comparator.comparingInt((String id) -> count.getOrDefault(id, 0)).thenComparing(leastUtilisedAfter(b)))
            .orElse(null);
        if (node == null) {
          return false;
        }
        count.merge(node, 1, Integer::sum);
        take(i, node);
      }
      return true;
    }
  }
}
