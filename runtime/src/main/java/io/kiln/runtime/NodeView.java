package io.kiln.runtime;

import java.util.Map;
import java.util.Objects;

/**
 * What the cluster knows of one node: its row in the node table. The node itself is the authority for
 * its row; everyone else reads a snapshot that may be slightly stale.
 *
 * @param nodeId stable identifier of the node for its lifetime
 * @param address host:port where the node's Kiln services (gateway) listen, for display and routing
 * @param total resources the node advertises
 * @param available resources not yet reserved by actors or tasks
 * @param labels user labels ({@code --labels zone=a}), used by node selectors
 * @param alive false once membership has seen the node leave
 */
public record NodeView(String nodeId, String address, Resources total, Resources available,
                       Map<String, String> labels, boolean alive) {

  public NodeView {
    Objects.requireNonNull(nodeId, "nodeId");
    Objects.requireNonNull(total, "total");
    Objects.requireNonNull(available, "available");
    labels = labels == null ? Map.of() : Map.copyOf(labels);
    address = address == null ? "" : address;
  }

  /**
   * The utilisation of the node's most used resource, in [0, 1]: Ray's "critical resource utilisation".
   * Resources the node does not have are ignored.
   */
  public double utilisation() {
    return utilisationAfter(Resources.NONE);
  }

  /** {@link #utilisation()} as it would be after also reserving {@code extra}. */
  public double utilisationAfter(Resources extra) {
    double max = 0;
    for (Map.Entry<String, Long> e : total.units().entrySet()) {
      long tot = e.getValue();
      if (tot <= 0) {
        continue;
      }
      long used = tot - available.unitsOf(e.getKey()) + extra.unitsOf(e.getKey());
      max = Math.max(max, Math.min(1.0, used / (double) tot));
    }
    return max;
  }
}
