package io.kiln.runtime.scheduling;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * An in-memory cluster for scheduler tests: holds a {@link ClusterView} and applies placements to it by
 * subtracting the placed resources from the chosen node's available, as the node's ledger would.
 * Not thread-safe; one per test.
 */
final class SimulatedCluster {

  private ClusterView view;

  SimulatedCluster(ClusterView view) {
    this.view = view;
  }

  /** {@code count} alive nodes {@code n000, n001, ...} of the same total, all idle; local is the first. */
  static SimulatedCluster uniform(int count, Resources total) {
    List<NodeView> nodes = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      nodes.add(node(id(i), total));
    }
    return new SimulatedCluster(new ClusterView(id(0), nodes));
  }

  static SimulatedCluster of(String localNodeId, NodeView... nodes) {
    return new SimulatedCluster(new ClusterView(localNodeId, List.of(nodes)));
  }

  /** Zero-padded so that id order is numeric order. */
  static String id(int i) {
    return String.format("n%03d", i);
  }

  static NodeView node(String nodeId, Resources total) {
    return new NodeView(nodeId, nodeId + ":8000", total, total, Map.of(), true);
  }

  static NodeView deadNode(String nodeId, Resources total) {
    return new NodeView(nodeId, nodeId + ":8000", total, total, Map.of(), false);
  }

  ClusterView view() {
    return view;
  }

  SimulatedCluster withLocal(String localNodeId) {
    view = new ClusterView(localNodeId, view.nodes());
    return this;
  }

  Placement place(PlacementRequest request) {
    return Scheduler.place(request, view);
  }

  /** Places {@code request}, reserves it on the first ranked node and returns that node's id. */
  String placeAndApply(PlacementRequest request) {
    Placement p = place(request);
    if (!(p instanceof Placement.Ranked ranked)) {
      throw new AssertionError("expected a ranked placement for " + request + ", got " + p);
    }
    reserve(ranked.first(), request.resources());
    return ranked.first();
  }

  SimulatedCluster reserve(String nodeId, Resources amount) {
    return update(nodeId, n -> new NodeView(n.nodeId(), n.address(), n.total(), n.available().minus(amount),
        n.labels(), n.alive()));
  }

  SimulatedCluster kill(String nodeId) {
    return update(nodeId, n -> new NodeView(n.nodeId(), n.address(), n.total(), n.available(), n.labels(), false));
  }

  NodeView node(String nodeId) {
    return view.node(nodeId).orElseThrow(() -> new AssertionError("no node " + nodeId));
  }

  /** Units of {@code key} reserved on {@code nodeId}. */
  long usedUnits(String nodeId, String key) {
    NodeView n = node(nodeId);
    return n.total().unitsOf(key) - n.available().unitsOf(key);
  }

  private SimulatedCluster update(String nodeId, UnaryOperator<NodeView> change) {
    List<NodeView> nodes = new ArrayList<>(view.nodes());
    boolean found = false;
    for (int i = 0; i < nodes.size(); i++) {
      if (nodes.get(i).nodeId().equals(nodeId)) {
        nodes.set(i, change.apply(nodes.get(i)));
        found = true;
      }
    }
    if (!found) {
      throw new AssertionError("no node " + nodeId);
    }
    view = new ClusterView(view.localNodeId(), nodes);
    return this;
  }
}
