package io.kiln.runtime.impl;

import io.kiln.runtime.ClusterView;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.scheduling.Placement;
import io.kiln.runtime.scheduling.PlacementIndex;
import io.kiln.runtime.scheduling.PlacementRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The cluster as this node sees it, for placement and users: the node table's rows, alive when their node is
 * a member, with this node's own row taken from its ledger (fresher than the row it last published).
 *
 * <p>Placement reads the same sources through a {@link PlacementIndex} kept current row by row: rows as the
 * node table announces them, liveness as membership changes, this node's row from its ledger when it has
 * moved, so a placement costs no rebuild of the view (O(nodes) objects at every attempt, before). Each index
 * update reads the row and the membership under one lock, so the last update of a node reads the newest of
 * both whatever thread it runs on. Thread-safe.
 */
final class ClusterViews {

  private static final Logger LOG = LoggerFactory.getLogger(ClusterViews.class);

  private final NodeOptions node;
  private final NodeTable nodeTable;
  private final ResourceLedger ledger;
  private final Supplier<List<String>> members;
  private final PlacementIndex index;
  private final Object lock = new Object();
  private volatile boolean stopped;
  // Guarded by lock: what the index holds for this node, and the member list last turned into a set.
  private Resources indexedAvailable;
  private boolean indexedAlive;
  private List<String> membersSeen;
  private Set<String> memberSet = Set.of();

  ClusterViews(NodeOptions node, NodeTable nodeTable, ResourceLedger ledger, Supplier<List<String>> members) {
    this.node = node;
    this.nodeTable = nodeTable;
    this.ledger = ledger;
    this.members = members;
    this.index = new PlacementIndex(node.nodeId());
    nodeTable.onRowChange(this::nodeChanged);
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

  /** {@code Scheduler.place(request, clusterView())}, answered from the index. */
  Placement place(PlacementRequest request) {
    synchronized (lock) {
      Resources available = ledger.available();
      boolean alive = !stopped;
      if (available != indexedAvailable || alive != indexedAlive) {
        index.put(localNode());
        indexedAvailable = available;
        indexedAlive = alive;
      }
      Placement p = index.place(request);
      if (p instanceof Placement.Ranked) {
        return p;
      }
      // A request that would wait (or fail) is checked against the full view before it does: a placement that
      // waits on an index missing a node would wait forever (seen once under load in ClusteredInProcessTest).
      // Waiting requests are rare and retried at most every 20 ms, so the scan costs little here.
      Placement scanned = io.kiln.runtime.scheduling.Scheduler.place(request, clusterView());
      if (scanned instanceof Placement.Ranked) {
        LOG.warn("placement index disagreed with the node table ({}); re-reading every row", p);
        resync();
        return scanned;
      }
      return p;
    }
  }

  /**
   * A node's row or membership changed: re-reads both into the index. Called by the node table's and
   * membership's event threads, and for every row after the table's first load.
   */
  void nodeChanged(String nodeId) {
    if (nodeId.equals(node.nodeId())) {
      return; // this node's entry comes from its ledger
    }
    synchronized (lock) {
      NodeRecord row = nodeTable.row(nodeId);
      if (row == null) {
        index.remove(nodeId);
      } else {
        index.put(row.toView(memberSet().contains(nodeId)));
      }
    }
  }

  /** Every row into the index (after {@link NodeTable#load}, whose rows are not announced). */
  void resync() {
    nodeTable.records().forEach(r -> nodeChanged(r.nodeId()));
  }

  private Set<String> memberSet() {
    List<String> now = members.get();
    if (now != membersSeen) { // Hazelcast's list is replaced whole on change; the in-memory one is a copy
      membersSeen = now;
      memberSet = new HashSet<>(now);
    }
    return memberSet;
  }
}
