package io.kiln.deploy;

import io.kiln.runtime.NodeOptions;
import java.util.Map;

/**
 * The node id a node gets without {@code --node-id}: stable where the platform gives the process a stable name,
 * random elsewhere.
 *
 * <ol>
 *   <li>{@code $KILN_NODE_ID}, when set;</li>
 *   <li>else {@code $HOSTNAME} in a Kubernetes pod ({@code $KUBERNETES_SERVICE_HOST} set: a StatefulSet's pod is
 *       {@code kiln-0}, {@code kiln-1}, ... across restarts and rescheduling) or when {@code KILN_STABLE_NODE_ID=1}
 *       (a VM or container whose host name is its identity);</li>
 *   <li>else {@code node-<random>}, as before: two processes on one host never collide.</li>
 * </ol>
 *
 * A stable id lets a restarted node come back as itself (its metrics, its node-affinity hints, its pools' names);
 * the runtime makes a restarted node wait until the cluster has let its previous incarnation go, and refuses a
 * second live node with the same id.
 */
final class NodeIdentity {

  static final String NODE_ID = "KILN_NODE_ID";
  static final String STABLE = "KILN_STABLE_NODE_ID";
  static final String IN_KUBERNETES = "KUBERNETES_SERVICE_HOST";
  static final String HOSTNAME = "HOSTNAME";

  private NodeIdentity() {
  }

  /**
   * The default node id under {@code env}.
   *
   * @throws CliException naming the variable the id came from when it is not a valid node id
   */
  static String defaultId(Map<String, String> env) {
    String explicit = blankToNull(env.get(NODE_ID));
    if (explicit != null) {
      return checked(explicit, "$" + NODE_ID);
    }
    String host = blankToNull(env.get(HOSTNAME));
    if (host != null && blankToNull(env.get(IN_KUBERNETES)) != null) {
      return checked(host, "$" + HOSTNAME + " (in a Kubernetes pod)");
    }
    if (host != null && "1".equals(env.get(STABLE))) {
      return checked(host, "$" + HOSTNAME + " (" + STABLE + "=1)");
    }
    return NodeOptions.randomNodeId();
  }

  private static String checked(String id, String source) {
    try {
      return NodeOptions.defaults().withNodeId(id).nodeId();
    } catch (IllegalArgumentException e) {
      throw new CliException("--node-id defaults to " + source + " here, which is '" + id + "': " + e.getMessage()
          + "; pass --node-id");
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
