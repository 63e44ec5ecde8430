package io.kiln.runtime;

import io.kiln.runtime.impl.RuntimeImpl;
import io.kiln.runtime.impl.cluster.HazelcastBackend;
import io.kiln.runtime.impl.cluster.HazelcastConfigs;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.eventbus.EventBusOptions;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
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
   * Joins (or, with no members given, starts) a cluster as {@code node}. The returned runtime's
   * {@link KilnRuntime#shutdown()} leaves the cluster and closes Vert.x. Fails if members were given but
   * none of them answered (Hazelcast would otherwise quietly form a cluster of one).
   */
  public static CompletionStage<KilnRuntime> join(NodeOptions node, ClusterOptions cluster) {
    HazelcastClusterManager manager = new HazelcastClusterManager(HazelcastConfigs.memberConfig(node.nodeId(), cluster));
    VertxOptions options = new VertxOptions().setPreferNativeTransport(false)
        .setEventBusOptions(new EventBusOptions().setHost(cluster.host()).setPort(0)
            .setClusterPublicHost(cluster.host()));
    return Vertx.builder().with(options).withClusterManager(manager).buildClustered()
        .compose(vertx -> {
          if (!cluster.members().isEmpty() && manager.getHazelcastInstance().getCluster().getMembers().size() < 2) {
            // Hazelcast forms a cluster of one when no listed member answers: that is a failed join here.
            return vertx.close().transform(x -> Future.failedFuture(new IllegalStateException(
                "could not join a cluster named '" + cluster.clusterName() + "' through "
                    + String.join(", ", cluster.members()) + ": no member answered (is a node running there, is "
                    + "that its cluster port, and do the cluster name and secret match?)")));
          }
          HazelcastBackend backend = new HazelcastBackend(manager.getHazelcastInstance(), node.nodeId());
          return RuntimeImpl.start(vertx, backend, node, vertx::close).map(rt -> (KilnRuntime) rt)
              .recover(err -> vertx.close().transform(x -> Future.failedFuture(err)));
        })
        .toCompletionStage();
  }

  /** The membership port this node actually bound (useful when {@link ClusterOptions#port()} was 0). */
  public static int clusterPort(KilnRuntime runtime) {
    if (runtime instanceof RuntimeImpl rt && rt.backend() instanceof HazelcastBackend hz) {
      return hz.hazelcast().getCluster().getLocalMember().getAddress().getPort();
    }
    throw new IllegalArgumentException("not a clustered node");
  }
}
