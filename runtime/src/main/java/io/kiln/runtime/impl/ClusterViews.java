package io.kiln.runtime.impl;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeView;
import java.util.ArrayList;
import java.util.List;

/**
 * The cluster as this node sees it, for placement and users: the node table's rows, with this node's own
 * row taken from its ledger (fresher than the row it last published). Thread-safe.
 */
final class ClusterViews {

  private final NodeOptions node;
  private final NodeTable nodeTable;
  private final ResourceLedger ledger;
  private volatile boolean stopped;

  ClusterViews(NodeOptions node, NodeTable nodeTable, ResourceLedger ledger) {
    this.node = node;
    this.nodeTable = nodeTable;
    this.ledger = ledger;
  }

  /** From now on this node shows as not alive. */
  void stopped() {
    stopped = true;
  }

  ClusterView clusterView() {
    List<NodeView> views = new ArrayList<>();
    for (NodeView v : nodeTable.views()) {
      if (v.nodeId().equals(node.nodeId())) {
        // Our own ledger is fresher than the row we last published.
        views.add(localNode());
      } else {
        views.add(v);
      }
    }
    if (views.stream().noneMatch(v -> v.nodeId().equals(node.nodeId()))) {
      views.add(localNode());
    }
    return new ClusterView(node.nodeId(), views);
  }

  NodeView localNode() {
    NodeRecord row = nodeTable.row(node.nodeId());
    String address = row == null ? node.host() : row.toView(true).address();
    return new NodeView(node.nodeId(), address, ledger.total(), ledger.available(), node.labels(), !stopped);
  }
}
