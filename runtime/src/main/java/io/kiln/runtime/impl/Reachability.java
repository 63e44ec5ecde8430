package io.kiln.runtime.impl;

import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which member nodes this node cannot reach over the event bus now. A node becomes unreachable when the bus's last
 * connection to it closes ({@link BusLinks}): at once when its process dies on this host (the kernel closes its
 * sockets), on a reset or refusal across hosts, and within {@code ClusterOptions.busFailureDetect} when its host
 * goes silent (Vert.x closes a connection whose ping goes unanswered). Then, and whenever any connection to a node
 * closes, the actor calls in flight to it fail at once ({@link CallTracker#nodeUnreachable}): what went out on that
 * connection will never be answered. While a node is unreachable, new actor calls to it fail without being sent.
 *
 * <p>It is not a death sentence: membership stays Hazelcast's (its own heartbeats and timeout), and a node is
 * reachable again as soon as it answers a ping: while it is unreachable this node pings its agent (the ping is also
 * what makes Vert.x connect again), {@link #PROBE_MS} ms after each ping that failed or went unanswered for
 * {@link #PING_TIMEOUT_MS} ms. A new connection alone proves nothing (the kernel of a hung process accepts it). A
 * node that leaves the cluster is forgotten here: its calls are failed as dead by membership.
 *
 * <p>Thread-safe; the connection events come on event loops and never block.
 */
final class Reachability implements BusLinks.Listener {

  private static final Logger LOG = LoggerFactory.getLogger(Reachability.class);
  /** The node-table service under which each node advertises its event-bus server, {@code ip:port}. */
  static final String BUS_SERVICE = "bus";
  /** The pause between an unreachable member's unanswered ping and the next. */
  static final long PROBE_MS = 250;
  /** How long a ping to an unreachable member waits for its answer. */
  static final long PING_TIMEOUT_MS = 1000;

  /** Why and since when a node is unreachable. */
  private record Suspect(String reason, long sinceNanos) {
  }

  private final String localNodeId;
  private final Vertx vertx;
  private final NodeTable nodeTable;
  private final CallTracker calls;
  private final Supplier<List<String>> members;
  private final LongSupplier nanoClock;
  private final Set<BusLinks.Link> open = ConcurrentHashMap.newKeySet();
  private final Map<String, Suspect> suspects = new ConcurrentHashMap<>();
  /** Pings a node's agent; set once the call path exists. */
  private volatile Function<String, CompletionStage<?>> ping;
  private volatile boolean stopped;

  Reachability(String localNodeId, Vertx vertx, NodeTable nodeTable, CallTracker calls,
               Supplier<List<String>> members, LongSupplier nanoClock) {
    this.localNodeId = localNodeId;
    this.vertx = vertx;
    this.nodeTable = nodeTable;
    this.calls = calls;
    this.members = members;
    this.nanoClock = nanoClock;
  }

  void pingWith(Function<String, CompletionStage<?>> p) {
    this.ping = p;
  }

  /** Whether calls to {@code nodeId} would go nowhere now; the hot path of every remote call. */
  boolean unreachable(String nodeId) {
    return !suspects.isEmpty() && suspects.containsKey(nodeId);
  }

  /** Why {@code nodeId} is unreachable and for how long, or null when it is not. */
  String why(String nodeId) {
    Suspect s = suspects.get(nodeId);
    return s == null ? null : s.reason() + ", " + TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - s.sinceNanos())
        + " ms ago";
  }

  @Override
  public void opened(BusLinks.Link link) {
    // Not proof of life: the kernel of a hung (or stopped) process still accepts connections. Its answer is.
    open.add(link);
  }

  @Override
  public void closed(BusLinks.Link link) {
    open.remove(link);
    if (stopped) {
      return;
    }
    String node = nodeAt(link.remote);
    if (node == null || node.equals(localNodeId) || !members.get().contains(node)) {
      return; // not a node's bus (or one that left: membership failed its calls)
    }
    String reason = "its event-bus connection (" + link + ") closed";
    boolean another = false;
    for (BusLinks.Link l : open) {
      another |= node.equals(nodeAt(l.remote));
    }
    boolean first = !another && suspects.putIfAbsent(node, new Suspect(reason, nanoClock.getAsLong())) == null;
    // Marked before the sweep: a call tracked after the sweep sees the mark (CallPath checks after tracking).
    int failed = calls.nodeUnreachable(node, reason);
    if (first || failed > 0) {
      LOG.warn("node {} is unreachable: {}; {} call(s) in flight to it failed{}", node, reason, failed,
          another ? " (another connection to it is open)" : first ? "; calls to it fail at once until it answers"
              + " again or leaves the cluster" : "");
    } else {
      LOG.debug("node {}, still unreachable: {}", node, reason); // a probe's connection to a hung node, closed again
    }
    if (first) {
      vertx.setTimer(PROBE_MS, id -> probe(node));
    }
  }

  /** Membership dropped {@code nodeId}: its calls are failed as dead from now on. */
  void nodeLeft(String nodeId) {
    suspects.remove(nodeId);
  }

  /** This node is going (shut down or crashed): its own connections closing say nothing about the others. */
  void stop() {
    stopped = true;
    suspects.clear();
  }

  private void probe(String node) {
    if (stopped || !suspects.containsKey(node)) {
      return;
    }
    if (!members.get().contains(node)) {
      suspects.remove(node);
      return;
    }
    Function<String, CompletionStage<?>> p = ping;
    if (p == null) {
      vertx.setTimer(PROBE_MS, id -> probe(node));
      return;
    }
    p.apply(node).whenComplete((v, err) -> {
      if (err == null) {
        reachable(node, "it answered a ping");
      } else {
        vertx.setTimer(PROBE_MS, id -> probe(node));
      }
    });
  }

  private void reachable(String node, String how) {
    Suspect s = suspects.remove(node);
    if (s != null) {
      LOG.info("node {} is reachable again: {} ({} ms after {})", node, how,
          TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - s.sinceNanos()), s.reason());
    }
  }

  /** The node whose event-bus server is at {@code remote}, by the rows' advertised {@value #BUS_SERVICE} address. */
  private String nodeAt(SocketAddress remote) {
    if (remote == null) {
      return null;
    }
    for (NodeRecord r : nodeTable.records()) {
      String bus = r.services() == null ? null : r.services().get(BUS_SERVICE);
      int colon = bus == null ? -1 : bus.lastIndexOf(':');
      if (colon > 0 && bus.substring(colon + 1).equals(Integer.toString(remote.port()))) {
        String ip = bus.substring(0, colon);
        if (ip.equals(remote.hostAddress()) || ip.equals(remote.host())) {
          return r.nodeId();
        }
      }
    }
    return null;
  }
}
