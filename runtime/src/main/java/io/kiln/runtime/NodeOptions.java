package io.kiln.runtime;

import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * How a node presents itself: identity, the resources it advertises and its labels.
 *
 * @param nodeId unique node id (a random {@code node-xxxxxxxx} by default)
 * @param host interface this node's services bind to and advertise (explicit; {@code 127.0.0.1} by default)
 * @param resources resources advertised: CPU defaults to the processor count; GPU is a logical count that
 *     may be overridden (so a CPU machine can advertise GPUs for testing); custom keys are per-node slots
 * @param labels labels for node selectors ({@code zone=a})
 */
public record NodeOptions(String nodeId, String host, Resources resources, Map<String, String> labels) {

  public NodeOptions {
    Objects.requireNonNull(nodeId, "nodeId");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(resources, "resources");
    labels = labels == null ? Map.of() : Map.copyOf(labels);
    if (!nodeId.matches("[A-Za-z0-9._-]{1,64}")) {
      throw new IllegalArgumentException("nodeId must be 1..64 of [A-Za-z0-9._-], got '" + nodeId + "'");
    }
    if (resources.unitsOf(Resources.GPU) % Resources.SCALE != 0) {
      throw new IllegalArgumentException("a node's GPU count must be whole, got " + resources.get(Resources.GPU));
    }
  }

  public static String randomNodeId() {
    return "node-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A node on 127.0.0.1 with a random id, all processors as CPU, no GPU. */
  public static NodeOptions defaults() {
    return new NodeOptions(randomNodeId(), "127.0.0.1", Resources.cpu(Runtime.getRuntime().availableProcessors()),
        Map.of());
  }

  public NodeOptions withNodeId(String id) {
    return new NodeOptions(id, host, resources, labels);
  }

  public NodeOptions withResources(Resources r) {
    return new NodeOptions(nodeId, host, r, labels);
  }

  public NodeOptions withLabels(Map<String, String> l) {
    return new NodeOptions(nodeId, host, resources, l);
  }

  public NodeOptions withHost(String h) {
    return new NodeOptions(nodeId, h, resources, labels);
  }
}
