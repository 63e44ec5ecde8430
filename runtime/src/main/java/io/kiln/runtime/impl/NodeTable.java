package io.kiln.runtime.impl;

import io.kiln.runtime.NodeView;
import io.kiln.runtime.WireCodec;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import io.kiln.runtime.spi.cluster.SharedMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The node table ({@code kiln.nodes}) mirrored locally: every node keeps a cache of all rows, refreshed by
 * map events, so placement reads it without a round trip. Liveness comes from membership, not from rows.
 */
final class NodeTable {

  static final String MAP = "kiln.nodes";

  private final ClusterBackend backend;
  private final SharedMap map;
  private final Map<String, NodeRecord> rows = new ConcurrentHashMap<>();
  private final List<Runnable> changeListeners = new CopyOnWriteArrayList<>();
  private final List<Consumer<String>> rowListeners = new CopyOnWriteArrayList<>();

  NodeTable(ClusterBackend backend) {
    this.backend = backend;
    this.map = backend.map(MAP);
    map.addListener((key, value) -> {
      if (value == null) {
        rows.remove(key);
      } else {
        NodeRecord rec = WireCodec.fromJson(value, NodeRecord.class);
        rows.merge(key, rec, (old, neu) -> neu.version() >= old.version() ? neu : old);
      }
      rowListeners.forEach(l -> l.accept(key));
      changeListeners.forEach(Runnable::run);
    });
  }

  /** Loads all rows once (listener events keep the cache current afterwards). */
  CompletionStage<Void> load() {
    return map.entries().thenAccept(m -> m.forEach((k, v) -> {
      NodeRecord rec = WireCodec.fromJson(v, NodeRecord.class);
      rows.merge(k, rec, (old, neu) -> neu.version() >= old.version() ? neu : old);
    }));
  }

  void onChange(Runnable listener) {
    changeListeners.add(listener);
  }

  /**
   * Told the node id of every row another member changed or removed, after the cache has it (rows loaded by
   * {@link #load} are not announced). On the map's event thread; must not block.
   */
  void onRowChange(Consumer<String> listener) {
    rowListeners.add(listener);
  }

  CompletionStage<Void> publish(NodeRecord rec) {
    rows.merge(rec.nodeId(), rec, (old, neu) -> neu.version() >= old.version() ? neu : old);
    return map.put(rec.nodeId(), WireCodec.toJson(rec));
  }

  CompletionStage<Void> remove(String nodeId) {
    rows.remove(nodeId);
    return map.remove(nodeId);
  }

  NodeRecord row(String nodeId) {
    return rows.get(nodeId);
  }

  /** Every known node; alive means a current cluster member. */
  List<NodeView> views() {
    Set<String> members = new HashSet<>(backend.members());
    List<NodeView> out = new ArrayList<>();
    for (NodeRecord r : rows.values()) {
      out.add(r.toView(members.contains(r.nodeId())));
    }
    return out;
  }

  List<NodeRecord> records() {
    return List.copyOf(rows.values());
  }
}
