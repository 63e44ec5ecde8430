package io.kiln.runtime;

import io.kiln.runtime.impl.BusLinks;
import io.kiln.runtime.impl.RuntimeImpl;
import io.kiln.runtime.impl.cluster.HazelcastBackend;
import io.kiln.runtime.impl.cluster.HazelcastConfigs;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Starts a clustered node: an embedded Hazelcast member (membership, node table, named-actor registry)
 * shared with a clustered Vert.x whose event bus carries remote calls, both bound to the explicit
 * interface of {@link ClusterOptions#host()}.
 */
public final class KilnCluster {

  private KilnCluster() {
  }

  /**
   * How many event loops a node's Vert.x runs: one per core the process may use, not Vert.x's two. Nothing blocks a
   * Kiln event loop (models run on worker threads, blocking work on Vert.x's worker pool), so a second loop per core
   * adds no capacity, only hand-offs between threads: which loop an actor cell (a pool manager) is given is
   * round-robin, so with two loops on one core a request crossed from the HTTP loop to the manager's and back in
   * some starts and not in others (measured on one pinned core: 53-72 µs of CPU per identity request against 29-39
   * with one loop, interleaved rounds). With one loop per core, a one-core node runs its gateway, pool managers and
   * runtime on one thread.
   */
  static int eventLoops() {
    return Math.max(1, Runtime.getRuntime().availableProcessors());
  }

  /**
   * Joins (or, with no members given, starts) a cluster as {@code node}. The returned runtime's
   * {@link KilnRuntime#shutdown()} leaves the cluster and closes Vert.x. Fails if members were given but
   * none of them answered (Hazelcast would otherwise quietly form a cluster of one), or if another member
   * already carries this node's id and does not leave within two failure timeouts. With a Kubernetes
   * discovery, a node that finds no one starts the cluster (the first pod does). With a
   * {@link ClusterOptions#minClusterSize()} above 1, this completes only once that many members are present.
   */
  public static CompletionStage<KilnRuntime> join(NodeOptions node, ClusterOptions cluster) {
    HazelcastClusterManager manager = new HazelcastClusterManager(HazelcastConfigs.memberConfig(node.nodeId(), cluster));
    String busIp;
    try {
      // Once, here: other nodes match the address their bus connects to against it (ClusterOptions.host is explicit).
      busIp = java.net.InetAddress.getByName(cluster.host()).getHostAddress();
    } catch (java.net.UnknownHostException e) {
      return java.util.concurrent.CompletableFuture.failedFuture(new IllegalArgumentException("cluster host '"
          + cluster.host() + "' does not resolve", e));
    }
    // Vert.x pings each bus connection every half of the bound and closes it when a pong takes longer than the other
    // half; a closed connection fails the calls in flight on it (io.kiln.runtime.impl.Reachability).
    long halfBound = Math.max(1, cluster.busFailureDetect().toMillis() / 2);
    EventBusOptions bus = new EventBusOptions().setHost(cluster.host()).setPort(cluster.busPort())
        .setClusterPublicHost(cluster.host()).setClusterPingInterval(halfBound).setClusterPingReplyInterval(halfBound);
    BusLinks links = new BusLinks();
    if (cluster.busTls() != null) {
      // Both ends present a certificate and check the other's against the cluster's authority.
      bus.setSsl(true).setClientAuth(io.vertx.core.http.ClientAuth.REQUIRED)
          .setKeyCertOptions(new io.vertx.core.net.PemKeyCertOptions().setCertPath(cluster.busTls().certChain().toString())
              .setKeyPath(cluster.busTls().privateKey().toString()))
          .setTrustOptions(new io.vertx.core.net.PemTrustOptions().addCertPath(cluster.busTls().trustedCa().toString()));
    }
    VertxOptions options = new VertxOptions().setPreferNativeTransport(false).setEventLoopPoolSize(eventLoops())
        .setEventBusOptions(bus);
    return Vertx.builder().with(options).withClusterManager(manager).withMetrics(links.metricsFactory()).buildClustered()
        .compose(vertx -> {
          if (!cluster.members().isEmpty() && manager.getHazelcastInstance().getCluster().getMembers().size() < 2) {
            // Hazelcast forms a cluster of one when no listed member answers: that is a failed join here.
            return vertx.close().transform(x -> Future.failedFuture(new IllegalStateException(
                "could not join a cluster named '" + cluster.clusterName() + "' through "
                    + String.join(", ", cluster.members()) + ": no member answered (is a node running there, is "
                    + "that its cluster port, and do the cluster name and secret match?)")));
          }
          return previousIncarnationGone(vertx, manager.getHazelcastInstance(), node.nodeId(),
              cluster.failureTimeout().multipliedBy(2))
              .compose(v -> {
                HazelcastBackend backend = new HazelcastBackend(manager.getHazelcastInstance(), node.nodeId());
                links.local(busIp, manager.getNodeInfo().port());
                return RuntimeImpl.start(vertx, backend, node, vertx::close, links).map(rt -> (KilnRuntime) rt);
              })
              .recover(err -> vertx.close().transform(x -> Future.failedFuture(err)));
        })
        .toCompletionStage();
  }

  /**
   * Waits, up to {@code patience}, until no other member carries this node's id, then succeeds; fails if one
   * still does. A stable node id (a pod's name) comes back after a restart, possibly before the cluster has
   * declared its previous incarnation dead; two live members with one id would confuse every registry entry.
   */
  private static Future<Void> previousIncarnationGone(Vertx vertx, HazelcastInstance hz, String nodeId,
                                                      java.time.Duration patience) {
    long deadline = System.nanoTime() + patience.toNanos();
    io.vertx.core.Promise<Void> done = io.vertx.core.Promise.promise();
    Runnable[] check = new Runnable[1];
    check[0] = () -> {
      List<String> twins = new ArrayList<>();
      Member self = hz.getCluster().getLocalMember();
      for (Member m : hz.getCluster().getMembers()) {
        if (!m.equals(self) && nodeId.equals(m.getAttribute(HazelcastConfigs.NODE_ATTRIBUTE))) {
          twins.add(m.getAddress().toString());
        }
      }
      if (twins.isEmpty()) {
        done.complete();
      } else if (System.nanoTime() > deadline) {
        done.fail(new IllegalStateException("node id '" + nodeId + "' is already a member of the cluster (at "
            + String.join(", ", twins) + "): another node runs with the same node id, or its previous incarnation "
            + "is still alive; give each node its own --node-id"));
      } else {
        vertx.setTimer(200, t -> check[0].run());
      }
    };
    check[0].run();
    return done.future();
  }

  /** The membership port this node actually bound (useful when {@link ClusterOptions#port()} was 0). */
  public static int clusterPort(KilnRuntime runtime) {
    if (runtime instanceof RuntimeImpl rt && rt.backend() instanceof HazelcastBackend hz) {
      return hz.hazelcast().getCluster().getLocalMember().getAddress().getPort();
    }
    throw new IllegalArgumentException("not a clustered node");
  }
}
