package io.kiln.runtime;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A snapshot of the node table as seen from one node, the input of placement decisions.
 *
 * @param localNodeId the node taking the decision (preferred by DEFAULT placement)
 * @param nodes every known node, alive or not
 */
public record ClusterView(String localNodeId, List<NodeView> nodes) {

  public ClusterView {
    Objects.requireNonNull(localNodeId, "localNodeId");
    nodes = List.copyOf(nodes);
  }

  public Optional<NodeView> node(String nodeId) {
    for (NodeView n : nodes) {
      if (n.nodeId().equals(nodeId)) {
        return Optional.of(n);
      }
    }
    return Optional.empty();
  }

  public List<NodeView> aliveNodes() {
    return nodes.stream().filter(NodeView::alive).toList();
  }
}
