package io.kiln.runtime;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a node joins a Kiln cluster (Hazelcast membership and the clustered Vert.x event bus).
 *
 * @param clusterName members only join a cluster with the same name; with a {@code secret}, the name
 *     members compare is derived from both, so a member that does not know the secret cannot join
 * @param host the interface to bind and advertise, explicitly (never a wildcard)
 * @param port the membership port ({@code --cluster-port}, 5701 by default; 0 picks a free one)
 * @param members {@code host:port} of members to join through (TCP/IP only, never multicast); empty to
 *     start a new cluster (the head)
 * @param heartbeatInterval how often members heartbeat
 * @param failureTimeout a member silent this long is declared dead and its actors are repaired
 * @param secret optional shared secret, see {@code clusterName}; null for none
 * @param discovery how the other members are found: {@link ClusterDiscovery#STATIC} (the default) joins through
 *     {@code members}; a Kubernetes discovery finds them through DNS or the Kubernetes API, needs a fixed
 *     {@code port} (or a {@link ClusterDiscovery#memberPort()}) and takes no {@code members}
 * @param minClusterSize split-brain protection: with N &gt; 1, a node waits at start until N members are present,
 *     and writes to the runtime's registry and node table are refused while this member sees fewer than N
 *     (so the smaller side of a network partition cannot create or free named actors); 1 (the default) is off
 * @param busPort the clustered event bus's port (remote calls); 0 (the default) picks a free one
 * @param busTls mutual TLS on the event bus; null (the default) for plain TCP
 * @param busFailureDetect the bound on noticing that the event-bus connection to a node is broken when no close
 *     tells (a host gone silent): each connection is pinged every half of it and closed when a pong takes longer
 *     than the other half. A closed connection (at once on the same host when a process dies; a reset or refusal
 *     across hosts; or this bound) makes the calls in flight to that node fail with {@link NodeUnreachableException}
 *     at once, and new calls to it too until it answers again or membership drops it; membership itself still
 *     waits for {@code failureTimeout}. At least {@link #MIN_BUS_FAILURE_DETECT}; by default
 *     {@link #DEFAULT_BUS_FAILURE_DETECT}
 */
public record ClusterOptions(String clusterName, String host, int port, List<String> members,
                             Duration heartbeatInterval, Duration failureTimeout, String secret,
                             ClusterDiscovery discovery, int minClusterSize, int busPort, BusTls busTls,
                             Duration busFailureDetect) {

  public static final String DEFAULT_CLUSTER_NAME = "kiln";
  public static final int DEFAULT_PORT = 5701;
  public static final Duration DEFAULT_HEARTBEAT = Duration.ofSeconds(1);
  public static final Duration DEFAULT_FAILURE_TIMEOUT = Duration.ofSeconds(5);
  /**
   * A connection silent for 2 s (a ping unanswered for 1 s, sent 1 s after the last pong) counts as broken: well
   * inside the 5 s membership timeout, and far above the event-loop stalls of a loaded node (a late pong costs the
   * calls then in flight one re-send, never the node's membership).
   */
  public static final Duration DEFAULT_BUS_FAILURE_DETECT = Duration.ofSeconds(2);
  /** The shortest {@link #busFailureDetect()} accepted: below it, a busy event loop's pong would read as a death. */
  public static final Duration MIN_BUS_FAILURE_DETECT = Duration.ofMillis(200);

  /** Static discovery through {@code members}, no split-brain protection, a free event-bus port. */
  public ClusterOptions(String clusterName, String host, int port, List<String> members, Duration heartbeatInterval,
                        Duration failureTimeout, String secret) {
    this(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, ClusterDiscovery.STATIC, 1, 0,
        null, DEFAULT_BUS_FAILURE_DETECT);
  }

  /** Plain TCP on the event bus. */
  public ClusterOptions(String clusterName, String host, int port, List<String> members, Duration heartbeatInterval,
                        Duration failureTimeout, String secret, ClusterDiscovery discovery, int minClusterSize,
                        int busPort) {
    this(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, discovery, minClusterSize,
        busPort, null, DEFAULT_BUS_FAILURE_DETECT);
  }

  /** The default {@link #busFailureDetect()}. */
  public ClusterOptions(String clusterName, String host, int port, List<String> members, Duration heartbeatInterval,
                        Duration failureTimeout, String secret, ClusterDiscovery discovery, int minClusterSize,
                        int busPort, BusTls busTls) {
    this(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, discovery, minClusterSize,
        busPort, busTls, DEFAULT_BUS_FAILURE_DETECT);
  }

  public ClusterOptions {
    Objects.requireNonNull(clusterName, "clusterName");
    Objects.requireNonNull(host, "host");
    members = members == null ? List.of() : List.copyOf(members);
    Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
    Objects.requireNonNull(failureTimeout, "failureTimeout");
    if (isWildcard(host)) {
      throw new IllegalArgumentException("bind the cluster to an explicit interface, not '" + host + "'");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be 0..65535, got " + port);
    }
    if (failureTimeout.compareTo(heartbeatInterval.multipliedBy(2)) < 0) {
      throw new IllegalArgumentException("failureTimeout must be at least two heartbeat intervals");
    }
    for (String m : members) {
      if (!m.matches("[^:\\s]+:\\d{1,5}")) {
        throw new IllegalArgumentException("member address must be host:port, got '" + m + "'");
      }
    }
    discovery = discovery == null ? ClusterDiscovery.STATIC : discovery;
    if (discovery.isKubernetes() && !members.isEmpty()) {
      throw new IllegalArgumentException("with discovery " + discovery.spelling()
          + " the members are found, not listed; got members " + members);
    }
    if (discovery.isKubernetes() && port == 0 && discovery.memberPort() == 0) {
      throw new IllegalArgumentException("Kubernetes discovery needs a fixed cluster port (every member listens on "
          + "the same one), not 0");
    }
    if (minClusterSize < 1) {
      throw new IllegalArgumentException("minimum cluster size must be at least 1, got " + minClusterSize);
    }
    if (busPort < 0 || busPort > 65535) {
      throw new IllegalArgumentException("event bus port must be 0..65535, got " + busPort);
    }
    busFailureDetect = busFailureDetect == null ? DEFAULT_BUS_FAILURE_DETECT : busFailureDetect;
    if (busFailureDetect.compareTo(MIN_BUS_FAILURE_DETECT) < 0) {
      throw new IllegalArgumentException("event bus failure detection must be at least "
          + MIN_BUS_FAILURE_DETECT.toMillis() + " ms, got " + busFailureDetect.toMillis() + " ms");
    }
  }

  /**
   * Whether {@code host} is empty or a wildcard address in any spelling ({@code 0.0.0.0}, {@code ::},
   * {@code [::]}, {@code 0:0:0:0:0:0:0:0}, {@code 0}, {@code *}). Only IP literals are parsed; names are never
   * looked up here.
   */
  static boolean isWildcard(String host) {
    String h = host.trim();
    if (h.startsWith("[") && h.endsWith("]")) {
      h = h.substring(1, h.length() - 1);
    }
    if (h.isEmpty() || h.equals("*")) {
      return true;
    }
    if (h.contains(":") || h.chars().allMatch(c -> Character.isDigit(c) || c == '.')) {
      try {
        return java.net.InetAddress.getByName(h).isAnyLocalAddress();
      } catch (java.net.UnknownHostException e) {
        return false; // not a literal after all; membership will say it cannot bind
      }
    }
    return false;
  }

  /** A new cluster (the head) on {@code host:port}. */
  public static ClusterOptions head(String host, int port) {
    return new ClusterOptions(DEFAULT_CLUSTER_NAME, host, port, List.of(), DEFAULT_HEARTBEAT,
        DEFAULT_FAILURE_TIMEOUT, null);
  }

  /** Joining the cluster that {@code address} ({@code host:port}) is a member of. */
  public static ClusterOptions join(String host, int port, String address) {
    return new ClusterOptions(DEFAULT_CLUSTER_NAME, host, port, List.of(address), DEFAULT_HEARTBEAT,
        DEFAULT_FAILURE_TIMEOUT, null);
  }

  /**
   * A node on {@code host:port} whose members {@code discovery} finds (the first one found alone starts the
   * cluster; later ones join it, and clusters formed apart merge).
   */
  public static ClusterOptions discovered(String host, int port, ClusterDiscovery discovery) {
    return new ClusterOptions(DEFAULT_CLUSTER_NAME, host, port, List.of(), DEFAULT_HEARTBEAT,
        DEFAULT_FAILURE_TIMEOUT, null, discovery, 1, 0);
  }

  public ClusterOptions withClusterName(String name) {
    return new ClusterOptions(name, host, port, members, heartbeatInterval, failureTimeout, secret, discovery,
        minClusterSize, busPort, busTls, busFailureDetect);
  }

  public ClusterOptions withSecret(String s) {
    return new ClusterOptions(clusterName, host, port, members, heartbeatInterval, failureTimeout, s, discovery,
        minClusterSize, busPort, busTls, busFailureDetect);
  }

  public ClusterOptions withFailureDetection(Duration heartbeat, Duration timeout) {
    return new ClusterOptions(clusterName, host, port, members, heartbeat, timeout, secret, discovery, minClusterSize,
        busPort, busTls, busFailureDetect);
  }

  /** The same options, with the members found by {@code d} (a Kubernetes discovery needs no member list). */
  public ClusterOptions withDiscovery(ClusterDiscovery d) {
    return new ClusterOptions(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, d,
        minClusterSize, busPort, busTls, busFailureDetect);
  }

  public ClusterOptions withMinClusterSize(int n) {
    return new ClusterOptions(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, discovery, n,
        busPort, busTls, busFailureDetect);
  }

  public ClusterOptions withBusPort(int p) {
    return new ClusterOptions(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, discovery,
        minClusterSize, p, busTls, busFailureDetect);
  }

  public ClusterOptions withBusTls(BusTls tls) {
    return new ClusterOptions(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, discovery,
        minClusterSize, busPort, tls, busFailureDetect);
  }

  /** The same options, noticing a broken event-bus connection within {@code bound} (see {@link #busFailureDetect()}). */
  public ClusterOptions withBusFailureDetect(Duration bound) {
    return new ClusterOptions(clusterName, host, port, members, heartbeatInterval, failureTimeout, secret, discovery,
        minClusterSize, busPort, busTls, bound);
  }

  /** Where the members found by a Kubernetes discovery listen: its member port, else this node's own. */
  public int kubernetesMemberPort() {
    return discovery.memberPort() != 0 ? discovery.memberPort() : port;
  }

  @Override
  public String toString() {
    return "ClusterOptions[" + clusterName + " on " + host + ":" + port + ", members=" + members
        + (discovery.isKubernetes() ? ", discovery=" + discovery.spelling() : "")
        + (minClusterSize > 1 ? ", minClusterSize=" + minClusterSize : "")
        + (busPort != 0 ? ", busPort=" + busPort : "")
        + (busTls != null ? ", busTls" : "")
        + (!busFailureDetect.equals(DEFAULT_BUS_FAILURE_DETECT) ? ", busFailureDetect=" + busFailureDetect.toMillis()
            + "ms" : "")
        + (secret == null ? "" : ", secret=***") + "]";
  }
}
