package io.kiln.runtime;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a node finds the other members of its cluster. Never multicast.
 *
 * <ul>
 *   <li>{@link Mode#STATIC}: the {@link ClusterOptions#members()} list ({@code kiln start --address HOST:PORT});
 *       an empty list starts a new cluster ({@code --head}).</li>
 *   <li>{@link Mode#KUBERNETES_DNS}: Hazelcast's Kubernetes discovery in DNS lookup mode: every address the name
 *       {@link #serviceDns()} resolves to (a headless Service's A records, one per pod) is a member on
 *       {@link #memberPort()}. Needs no Kubernetes API access, so no RBAC.</li>
 *   <li>{@link Mode#KUBERNETES_API}: the same discovery in API mode: the endpoints of Service
 *       {@link #serviceName()} in {@link #namespace()} (null: the pod's own namespace, from its service account),
 *       read from the Kubernetes API with the pod's service-account token (RBAC: get/list/watch of pods, endpoints,
 *       endpoint slices and services).</li>
 * </ul>
 *
 * <p>The spellings {@link #parse} reads ({@code kiln start --discovery}, env {@code KILN_DISCOVERY}):
 * {@code static}, {@code k8s-dns:NAME[:PORT]}, {@code k8s-api:SERVICE[@NAMESPACE][:PORT]}; {@link #spelling()}
 * gives them back.
 *
 * @param serviceDns the DNS name to resolve ({@code KUBERNETES_DNS} only)
 * @param serviceName the Service whose endpoints are members ({@code KUBERNETES_API} only)
 * @param namespace its namespace, or null for the pod's own ({@code KUBERNETES_API} only)
 * @param memberPort the membership port of the members found; 0 means this node's own cluster port (every
 *     pod of a StatefulSet listens on the same one)
 */
public record ClusterDiscovery(Mode mode, String serviceDns, String serviceName, String namespace, int memberPort) {

  /** Where the members come from. */
  public enum Mode { STATIC, KUBERNETES_DNS, KUBERNETES_API }

  /** The member list of {@link ClusterOptions} (the default). */
  public static final ClusterDiscovery STATIC = new ClusterDiscovery(Mode.STATIC, null, null, null, 0);

  // RFC 1123 host names (DNS names of Services are such), Kubernetes' DNS-1035 Service names and DNS-1123 labels.
  private static final Pattern DNS_NAME =
      Pattern.compile("(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?");
  private static final Pattern SERVICE_NAME = Pattern.compile("[a-z]([-a-z0-9]{0,61}[a-z0-9])?");
  private static final Pattern NAMESPACE = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

  public ClusterDiscovery {
    Objects.requireNonNull(mode, "mode");
    if (memberPort < 0 || memberPort > 65535) {
      throw new IllegalArgumentException("member port must be 0..65535, got " + memberPort);
    }
    switch (mode) {
      case STATIC -> {
        if (serviceDns != null || serviceName != null || namespace != null || memberPort != 0) {
          throw new IllegalArgumentException("static discovery takes its members from the member list only");
        }
      }
      case KUBERNETES_DNS -> {
        if (serviceDns == null || !DNS_NAME.matcher(serviceDns).matches()) {
          throw new IllegalArgumentException("k8s-dns needs a DNS name such as kiln-headless.kiln.svc.cluster.local, got '"
              + serviceDns + "'");
        }
        if (serviceName != null || namespace != null) {
          throw new IllegalArgumentException("k8s-dns takes a DNS name, not a service name or namespace");
        }
      }
      case KUBERNETES_API -> {
        if (serviceName == null || !SERVICE_NAME.matcher(serviceName).matches()) {
          throw new IllegalArgumentException("k8s-api needs a Service name (lower-case letters, digits and '-', "
              + "starting with a letter, at most 63), got '" + serviceName + "'");
        }
        if (namespace != null && !NAMESPACE.matcher(namespace).matches()) {
          throw new IllegalArgumentException("k8s-api namespace must be lower-case letters, digits and '-' (at most 63), "
              + "got '" + namespace + "'");
        }
        if (serviceDns != null) {
          throw new IllegalArgumentException("k8s-api takes a Service name, not a DNS name");
        }
      }
      default -> throw new AssertionError(mode);
    }
  }

  /** Members are the addresses {@code serviceDns} resolves to, on this node's own cluster port. */
  public static ClusterDiscovery kubernetesDns(String serviceDns) {
    return new ClusterDiscovery(Mode.KUBERNETES_DNS, serviceDns, null, null, 0);
  }

  /** Members are the endpoints of Service {@code serviceName} in {@code namespace} (null: the pod's own). */
  public static ClusterDiscovery kubernetesApi(String serviceName, String namespace) {
    return new ClusterDiscovery(Mode.KUBERNETES_API, null, serviceName, namespace, 0);
  }

  /** The same discovery, with members on {@code port} rather than on this node's own cluster port. */
  public ClusterDiscovery withMemberPort(int port) {
    return new ClusterDiscovery(mode, serviceDns, serviceName, namespace, port);
  }

  public boolean isKubernetes() {
    return mode != Mode.STATIC;
  }

  /**
   * Reads {@code static}, {@code k8s-dns:NAME[:PORT]} or {@code k8s-api:SERVICE[@NAMESPACE][:PORT]}.
   *
   * @throws IllegalArgumentException naming what is wrong and the spellings accepted
   */
  public static ClusterDiscovery parse(String text) {
    Objects.requireNonNull(text, "text");
    String s = text.strip();
    String usage = "; use static, k8s-dns:NAME[:PORT] or k8s-api:SERVICE[@NAMESPACE][:PORT]";
    if (s.equalsIgnoreCase("static")) {
      return STATIC;
    }
    int colon = s.indexOf(':');
    String kind = colon < 0 ? s : s.substring(0, colon);
    if (!kind.equals("k8s-dns") && !kind.equals("k8s-api")) {
      throw new IllegalArgumentException("unknown discovery '" + text + "'" + usage);
    }
    String rest = colon < 0 ? "" : s.substring(colon + 1);
    int port = 0;
    int last = rest.lastIndexOf(':');
    if (last >= 0) {
      String p = rest.substring(last + 1);
      if (!p.matches("\\d{1,5}") || Integer.parseInt(p) < 1 || Integer.parseInt(p) > 65535) {
        throw new IllegalArgumentException("discovery '" + text + "': port must be 1..65535, got '" + p + "'" + usage);
      }
      port = Integer.parseInt(p);
      rest = rest.substring(0, last);
    }
    if (rest.isEmpty()) {
      throw new IllegalArgumentException("discovery '" + text + "' names no " + (kind.equals("k8s-dns") ? "DNS name"
          : "Service") + usage);
    }
    try {
      if (kind.equals("k8s-dns")) {
        return kubernetesDns(rest).withMemberPort(port);
      }
      int at = rest.indexOf('@');
      return (at < 0 ? kubernetesApi(rest, null) : kubernetesApi(rest.substring(0, at), rest.substring(at + 1)))
          .withMemberPort(port);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("discovery '" + text + "': " + e.getMessage());
    }
  }

  /** The spelling {@link #parse} reads back to this value. */
  public String spelling() {
    String port = memberPort == 0 ? "" : ":" + memberPort;
    return switch (mode) {
      case STATIC -> "static";
      case KUBERNETES_DNS -> "k8s-dns:" + serviceDns + port;
      case KUBERNETES_API -> "k8s-api:" + serviceName + (namespace == null ? "" : "@" + namespace) + port;
    };
  }

  @Override
  public String toString() {
    return spelling();
  }
}
