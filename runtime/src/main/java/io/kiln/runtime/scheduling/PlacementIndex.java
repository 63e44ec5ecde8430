package io.kiln.runtime.scheduling;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.SchedulingStrategy.NodeAffinity;
import io.kiln.runtime.SchedulingStrategy.Spread;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@link Scheduler}'s policy over a node table kept as an index, for clusters of thousands of nodes: the
 * table is updated one row at a time ({@link #put}, {@link #remove}) and {@link #place} answers exactly what
 * {@code Scheduler.place(request, view())} would, without rebuilding or rescanning the view's objects.
 *
 * <p>How. Placement depends on a node only through its id, its liveness and its (total, available) pair.
 * Alive nodes are kept in one array sorted by id, each tagged with its <i>shape</i>: the distinct (total,
 * available) pairs, with their quantities as primitive arrays. A placement evaluates fit and utilisation
 * once per shape (real clusters have few: nodes are bought in a handful of sizes and actors reserve round
 * amounts), ranks the distinct utilisations ({@link ScoreSort}, a radix sort of their bits), and then writes the ranking in one
 * pass over the id-ordered array, as a stable counting sort (ties by id, or by SPREAD's rotated id order,
 * come out in place). That is O(shapes × resource kinds + alive nodes) with a few nanoseconds per node,
 * against the scan's object-heavy comparisons and sort. A shape's score for a request is computed once and
 * kept while the shape lives (for the last few distinct requests): placements repeat requests (a pool's
 * workers all ask the same) and most shapes outlive many placements, so a placement mostly re-scores only
 * the shapes that appeared since the same request was last placed. The result is the whole ranking, as the
 * scan gives it.
 *
 * <p>An update costs a binary search over the ids, a hash of the node's resources and, when a node joins,
 * leaves or dies, an array shift of the ids after it.
 *
 * <p>Node ids are unique (one row per node); {@link #put} replaces the row of the same id.
 *
 * <p>The per-shape arithmetic and its memos are {@link ShapeScores}; the shapes themselves {@link ShapeTable}.
 *
 * <p>Thread-safe: updates and placements are serialised on the index's monitor. Never blocks otherwise.
 */
public final class PlacementIndex {

  private static final int NO_FIT = -1;
  private static final int PACK = -2;
  private static final long NO_FIT_BITS = ShapeScores.NO_FIT_BITS;

  private final String localNodeId;
  /** Every known node, alive or not (hard affinity needs the dead ones, for its message). */
  private final Map<String, NodeView> byId = new HashMap<>();

  /** Alive nodes: ids sorted (String order, as the scan sorts them), and each one's shape slot. */
  private String[] ids = new String[16];
  private int[] shapeOf = new int[16];
  private int alive;

  private final ShapeTable shapes = new ShapeTable();
  private final ShapeScores scores = new ShapeScores(shapes);

  // Scratch of one placement, per shape slot (guarded by the monitor, like everything else).
  private int[] code = new int[16];
  private double[] score = new double[16];
  private int[] groupNext = new int[16];
  private final ScoreSort ranked = new ScoreSort();
  /** An empty index for the node {@code localNodeId}, which DEFAULT placement prefers. */
  public PlacementIndex(String localNodeId) {
    this.localNodeId = Objects.requireNonNull(localNodeId, "localNodeId");
  }

  /**
   * An index holding {@code view}'s nodes.
   *
   * @throws IllegalArgumentException if two nodes share an id
   */
  public static PlacementIndex of(ClusterView view) {
    PlacementIndex index = new PlacementIndex(view.localNodeId());
    for (NodeView n : view.nodes()) {
      if (index.byId.containsKey(n.nodeId())) {
        throw new IllegalArgumentException("duplicate node id " + n.nodeId());
      }
      index.put(n);
    }
    return index;
  }

  public String localNodeId() {
    return localNodeId;
  }

  /** Adds the node's row, or replaces the row of the same id. */
  public synchronized void put(NodeView node) {
    Objects.requireNonNull(node, "node");
    NodeView old = byId.put(node.nodeId(), node);
    boolean wasAlive = old != null && old.alive();
    if (wasAlive && node.alive()) {
      if (!sameResources(old, node)) {
        int p = position(node.nodeId());
        int previous = shapeOf[p];
        shapeOf[p] = shapes.acquire(node.total(), node.available());
        shapes.release(previous);
      }
    } else if (wasAlive) {
      removeAt(position(node.nodeId()));
    } else if (node.alive()) {
      insertAt(-position(node.nodeId()) - 1, node);
    }
  }

  /** Forgets the node (as a row removed from the node table); whether it was known. */
  public synchronized boolean remove(String nodeId) {
    NodeView old = byId.remove(nodeId);
    if (old != null && old.alive()) {
      removeAt(position(nodeId));
    }
    return old != null;
  }

  /** The node's row, if known. */
  public synchronized Optional<NodeView> node(String nodeId) {
    return Optional.ofNullable(byId.get(nodeId));
  }

  /** The indexed nodes as a view, in id order: what {@link #place} is equivalent to scanning. O(nodes). */
  public synchronized ClusterView view() {
    List<NodeView> nodes = new ArrayList<>(byId.values());
    nodes.sort((a, b) -> a.nodeId().compareTo(b.nodeId()));
    return new ClusterView(localNodeId, nodes);
  }

  /** Distinct (total, available) pairs among alive nodes: what a placement evaluates one by one. */
  public synchronized int shapes() {
    return shapes.size();
  }

  /** Exactly {@code Scheduler.place(request, view())}. */
  public synchronized Placement place(PlacementRequest request) {
    Objects.requireNonNull(request, "request");
    Resources need = request.resources();
    SchedulingStrategy strategy = request.strategy();
    if (strategy instanceof SchedulingStrategy.InPlacementGroup) {
      return new Placement.Infeasible("a placement into a placement group is decided by the group's bundle table "
          + "(BundleScheduler.placeInBundle), not over the node table");
    }
    if (strategy instanceof NodeAffinity affinity) {
      NodeView node = byId.get(affinity.nodeId());
      if (!affinity.soft()) {
        return Scheduler.hardAffinity(need, affinity.nodeId(), Optional.ofNullable(node));
      }
      if (node != null && node.alive() && need.fitsIn(node.available())) {
        return new Placement.Ranked(hybrid(need, node.nodeId()));
      }
      strategy = SchedulingStrategy.DEFAULT;
    }
    List<String> ranked = strategy instanceof Spread ? spread(need, request.sequence()) : hybrid(need, null);
    return ranked.isEmpty() ? noCandidate(need) : new Placement.Ranked(ranked);
  }

  // ---- placement ----------------------------------------------------------------------------------

  /**
   * DEFAULT's ranking: pack nodes (below the threshold after placing) local first then by id, then the
   * others by utilisation after placing, then id. {@code first}, when given (soft affinity), leads and is
   * left out of the rest.
   */
  private List<String> hybrid(Resources need, String first) {
    if (!scores.prepare(need)) {
      return List.of();
    }
    ensureScratch();
    int packCount = 0;
    ShapeScores.Memo memo = scores.memo(need, false);
    for (int slot = 0; slot < shapes.slots(); slot++) {
      ShapeTable.Shape s = shapes.at(slot);
      if (s == null) {
        continue;
      }
      long bits = scores.scoreBits(memo, slot, s, true);
      if (bits == NO_FIT_BITS) {
        code[slot] = NO_FIT;
      } else if (Double.longBitsToDouble(bits) < Scheduler.SPREAD_THRESHOLD) {
        code[slot] = PACK;
        packCount += s.count;
      } else {
        ranked.add(bits, slot);
      }
    }
    int groups = groupCounts();
    int firstPos = first == null ? -1 : position(first);
    if (firstPos >= 0) {
      int c = code[shapeOf[firstPos]];
      if (c == PACK) {
        packCount--;
      } else {
        groupNext[c]--;
      }
    }
    int localPos = position(localNodeId);
    if (localPos < 0 || localPos == firstPos || code[shapeOf[localPos]] != PACK) {
      localPos = -1;
    }
    int lead = firstPos >= 0 ? 1 : 0;
    int total = lead + packCount + startsAfter(lead + packCount, groups);
    if (total == 0) {
      return List.of();
    }
    String[] out = new String[total];
    int w = 0;
    if (firstPos >= 0) {
      out[w++] = first;
    }
    if (localPos >= 0) {
      out[w++] = localNodeId;
    }
    for (int i = 0; i < alive; i++) {
      int c = code[shapeOf[i]];
      if (c == NO_FIT || i == firstPos || i == localPos) {
        continue;
      }
      if (c == PACK) {
        out[w++] = ids[i];
      } else {
        out[groupNext[c]++] = ids[i];
      }
    }
    return List.of(out); // one copy; Ranked keeps an immutable list as it is
  }

  /** SPREAD's ranking: fitting nodes by current utilisation, ties in id order rotated by {@code sequence}. */
  private List<String> spread(Resources need, long sequence) {
    if (alive == 0 || !scores.prepare(need)) {
      return List.of();
    }
    ensureScratch();
    ShapeScores.Memo memo = scores.memo(need, true);
    for (int slot = 0; slot < shapes.slots(); slot++) {
      ShapeTable.Shape s = shapes.at(slot);
      if (s == null) {
        continue;
      }
      long bits = scores.scoreBits(memo, slot, s, false);
      if (bits == NO_FIT_BITS) {
        code[slot] = NO_FIT;
      } else {
        ranked.add(bits, slot);
      }
    }
    int groups = groupCounts();
    int total = startsAfter(0, groups);
    if (total == 0) {
      return List.of();
    }
    String[] out = new String[total];
    int offset = (int) Math.floorMod(sequence, (long) alive);
    for (int turn = 0; turn < alive; turn++) {
      int i = offset + turn < alive ? offset + turn : offset + turn - alive;
      int c = code[shapeOf[i]];
      if (c != NO_FIT) {
        out[groupNext[c]++] = ids[i];
      }
    }
    return List.of(out); // one copy; Ranked keeps an immutable list as it is
  }

  /**
   * Sorts the scores in {@link #ranked}, sets each of their shapes' code to its score's rank among the
   * distinct scores (ascending) and counts the nodes per rank into {@link #groupNext}; the number of ranks.
   */
  private int groupCounts() {
    ranked.sort();
    int groups = 0;
    for (int i = 0; i < ranked.size(); i++) {
      if (groups == 0 || ranked.key(i) != ranked.key(i - 1)) {
        groupNext[groups++] = 0;
      }
      int slot = ranked.slot(i);
      code[slot] = groups - 1;
      groupNext[groups - 1] += shapes.at(slot).count;
    }
    return groups;
  }

  /** Turns {@link #groupNext}'s counts into write positions starting at {@code start}; the nodes counted. */
  private int startsAfter(int start, int groups) {
    int at = start;
    for (int g = 0; g < groups; g++) {
      int c = groupNext[g];
      groupNext[g] = at;
      at += c;
    }
    return at - start;
  }

  private Placement noCandidate(Resources need) {
    if (alive == 0) {
      return Scheduler.noAliveNodes(need);
    }
    ensureScratch();
    long couldFit = 0;
    double best = Double.NEGATIVE_INFINITY;
    for (int slot = 0; slot < shapes.slots(); slot++) {
      ShapeTable.Shape s = shapes.at(slot);
      if (s == null) {
        continue;
      }
      if (need.fitsIn(s.total)) {
        couldFit += s.count;
      }
      score[slot] = Scheduler.coverage(need, s.total);
      best = Math.max(best, score[slot]);
    }
    if (couldFit > 0) {
      return Scheduler.pending(need, couldFit, alive);
    }
    for (int i = 0; i < alive; i++) {
      if (score[shapeOf[i]] == best) {
        return Scheduler.infeasible(need, byId.get(ids[i])); // the first in id order among the largest
      }
    }
    throw new IllegalStateException("no alive node had the best coverage");
  }

  /** Sizes the per-slot scratch arrays to the shape table. */
  private void ensureScratch() {
    int n = shapes.capacity();
    if (code.length < n) {
      code = Arrays.copyOf(code, n);
      score = Arrays.copyOf(score, n);
      groupNext = Arrays.copyOf(groupNext, n);
    }
    ranked.clear(n);
  }

  // ---- maintenance --------------------------------------------------------------------------------

  private static boolean sameResources(NodeView a, NodeView b) {
    return (a.total() == b.total() || a.total().equals(b.total()))
        && (a.available() == b.available() || a.available().equals(b.available()));
  }

  /** The node's index among alive ids, or {@code -(insertion point) - 1}. */
  private int position(String nodeId) {
    return Arrays.binarySearch(ids, 0, alive, nodeId);
  }

  private void insertAt(int p, NodeView node) {
    if (alive == ids.length) {
      ids = Arrays.copyOf(ids, alive * 2);
      shapeOf = Arrays.copyOf(shapeOf, alive * 2);
    }
    System.arraycopy(ids, p, ids, p + 1, alive - p);
    System.arraycopy(shapeOf, p, shapeOf, p + 1, alive - p);
    ids[p] = node.nodeId();
    shapeOf[p] = shapes.acquire(node.total(), node.available());
    alive++;
  }

  private void removeAt(int p) {
    shapes.release(shapeOf[p]);
    System.arraycopy(ids, p + 1, ids, p, alive - p - 1);
    System.arraycopy(shapeOf, p + 1, shapeOf, p, alive - p - 1);
    alive--;
    ids[alive] = null;
  }
}
