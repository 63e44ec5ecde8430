package io.kiln.runtime.impl;

import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import java.util.Map;

/**
 * A node's row in the node table ({@code kiln.nodes}), stored as JSON and written only by that node.
 *
 * @param total resources advertised, in fixed-point units
 * @param available resources not reserved, in fixed-point units
 * @param services ports of the node's services by name ({@code http}, {@code grpc}), for routing
 * @param version bumped on every write
 */
record NodeRecord(String nodeId, String host, Map<String, Long> total, Map<String, Long> available,
                  Map<String, String> labels, Map<String, String> services, long startedAtMillis, long version) {

  NodeView toView(boolean alive) {
    String http = services == null ? null : services.get("http");
    return new NodeView(nodeId, http == null ? host : host + ":" + http, Resources.ofUnits(total),
        Resources.ofUnits(available), labels, alive);
  }
}
