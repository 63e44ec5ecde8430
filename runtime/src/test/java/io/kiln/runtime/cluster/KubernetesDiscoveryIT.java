package io.kiln.runtime.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.MembershipListener;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.impl.RuntimeImpl;
import io.kiln.runtime.impl.cluster.HazelcastBackend;
import io.kiln.runtime.testing.NodeMain;
import io.kiln.runtime.testing.NodeProcesses;
import io.kiln.testkit.FreePorts;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hazelcast's Kubernetes discovery in DNS lookup mode, for real, without Kubernetes: the name looked up is
 * {@code localhost}, which resolves to 127.0.0.1 here as a headless Service's name resolves to its pods' IPs
 * there. The first member is on a fixed port and finds only itself, so it starts the cluster; the second,
 * on another port of the same address, is told the members' port ({@code k8s-dns:localhost:PORT}) and joins
 * it through the lookup. Also split-brain protection ({@code minClusterSize}) on the real maps, and the
 * refusal of a second member with the same node id (what stable pod names make possible). In-process
 * Hazelcast members, so it runs with the multi-process tests.
 */
class KubernetesDiscoveryIT {

  static final Duration JOIN = Duration.ofSeconds(120);
  final String cluster = "k8s-" + UUID.randomUUID();
  final List<KilnRuntime> started = new ArrayList<>();

  /** An actor the tests create across the two members. */
  public static final class Echo {
    public String where() {
      return "here";
    }
  }

  @AfterEach
  void stop() {
    for (int i = started.size() - 1; i >= 0; i--) {
      started.get(i).close();
    }
  }

  ClusterOptions options(int port, ClusterDiscovery discovery, int minClusterSize) {
    return new ClusterOptions(cluster, "127.0.0.1", port, List.of(), Duration.ofSeconds(1), Duration.ofSeconds(4),
        null, discovery, minClusterSize, 0);
  }

  CompletableFuture<KilnRuntime> start(String nodeId, ClusterOptions o) {
    return KilnCluster.join(new NodeOptions(nodeId, "127.0.0.1", Resources.cpu(1), Map.of()), o).toCompletableFuture()
        .thenApply(rt -> {
          synchronized (started) {
            started.add(rt);
          }
          return rt;
        });
  }

  /** Members as Hazelcast counts them (a second member with one node id included). */
  static int hazelcastMembers(KilnRuntime rt) {
    return ((HazelcastBackend) ((RuntimeImpl) rt).backend()).hazelcast().getCluster().getMembers().size();
  }

  static List<String> alive(KilnRuntime rt) {
    return rt.clusterView().aliveNodes().stream().map(NodeView::nodeId).sorted().toList();
  }

  @Test
  void aMemberFindsTheClusterThroughAKubernetesDnsLookup() throws Exception {
    int port = FreePorts.one();
    KilnRuntime first = start("dns-a", options(port, ClusterDiscovery.kubernetesDns("localhost"), 1))
        .get(JOIN.toSeconds(), TimeUnit.SECONDS);
    assertThat(KilnCluster.clusterPort(first)).isEqualTo(port);
    assertThat(first.members()).containsExactly("dns-a");

    KilnRuntime second = start("dns-b", options(0, ClusterDiscovery.kubernetesDns("localhost").withMemberPort(port), 1))
        .get(JOIN.toSeconds(), TimeUnit.SECONDS);

    await().atMost(JOIN).until(() -> alive(first).equals(List.of("dns-a", "dns-b"))
        && alive(second).equals(List.of("dns-a", "dns-b")));
    assertThat(first.isLeader()).as("the member that started the cluster leads it").isTrue();
    ActorHandle<Echo> there = first.actor(Echo::new).strategy(SchedulingStrategy.onNode("dns-b")).remote()
        .toCompletableFuture().get(JOIN.toSeconds(), TimeUnit.SECONDS);
    assertThat(there.nodeId()).isEqualTo("dns-b");
    assertThat(there.call(Echo::where).toCompletableFuture().get(30, TimeUnit.SECONDS)).isEqualTo("here");
  }

  @Test
  void withAMinimumClusterSizeANodeWaitsForItAndTheRegistryRefusesWritesBelowIt() throws Exception {
    int port = FreePorts.one();
    CompletableFuture<KilnRuntime> first = start("sbp-a", options(port, ClusterDiscovery.kubernetesDns("localhost"), 2));
    await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5)).until(() -> !first.isDone());

    KilnRuntime second = start("sbp-b", options(0, ClusterDiscovery.kubernetesDns("localhost").withMemberPort(port), 2))
        .get(JOIN.toSeconds(), TimeUnit.SECONDS);
    KilnRuntime head = first.get(JOIN.toSeconds(), TimeUnit.SECONDS);
    await().atMost(JOIN).until(() -> alive(head).size() == 2);
    head.actor(Echo::new).name("before").remote().toCompletableFuture().get(JOIN.toSeconds(), TimeUnit.SECONDS);

    second.close();
    started.remove(second);
    await().atMost(JOIN).until(() -> head.members().size() == 1);

    CompletableFuture<ActorHandle<Echo>> refused = head.actor(Echo::new).name("after").remote().toCompletableFuture();
    assertThat(refused).failsWithin(JOIN).withThrowableThat().havingRootCause()
        .withMessageContaining("Split brain protection exception");
    // Through the runtime's public face: the cause named, with the sizes (the management API answers 503 with it).
    CompletableFuture<Void> desired = head.store("kiln.deployments", String.class).put("d", "x").toCompletableFuture();
    assertThat(desired).failsWithin(JOIN).withThrowableThat().havingCause()
        .isInstanceOfSatisfying(BelowMinimumClusterSizeException.class, e -> {
          assertThat(e.minimum()).isEqualTo(2);
          assertThat(e.members()).isEqualTo(1);
          assertThat(e).hasMessageContaining("kiln.deployments").hasMessageContaining("minimum cluster size of 2");
        });
    assertThat(head.store("kiln.deployment-status", String.class).put("d", "x").toCompletableFuture())
        .as("observations are not protected").succeedsWithin(JOIN);
    // Reads still work: the name taken before the partition is still there.
    assertThat(head.getActor("default", "before", Echo.class).toCompletableFuture().get(30, TimeUnit.SECONDS))
        .isNotNull();
  }

  @Test
  void aSecondMemberWithTheSameNodeIdIsRefusedUnlessThePreviousIncarnationGoes() throws Exception {
    try (NodeProcesses nodes = new NodeProcesses(Path.of("target", "node-logs", "KubernetesDiscoveryIT"))) {
      int port = NodeProcesses.await(nodes.start(NodeMain.class.getName(), "twin", "--cluster", cluster), JOIN);
      ClusterOptions join = new ClusterOptions(cluster, "127.0.0.1", 0, List.of("127.0.0.1:" + port),
          Duration.ofSeconds(1), Duration.ofSeconds(4), null);
      KilnRuntime witness = start("witness", join).get(JOIN.toSeconds(), TimeUnit.SECONDS);
      List<String> seen = new CopyOnWriteArrayList<>();
      witness.addMembershipListener(new MembershipListener() {
        @Override
        public void memberJoined(String id) {
          seen.add("+" + id);
        }

        @Override
        public void memberLeft(String id) {
          seen.add("-" + id);
        }
      });

      // The first one stays: after two failure timeouts the newcomer gives up, naming the id and where it runs;
      // the other members never saw the node come or go.
      CompletableFuture<KilnRuntime> refused = start("twin", join);
      assertThat(refused).failsWithin(JOIN).withThrowableOfType(ExecutionException.class).havingCause()
          .withMessageStartingWith("node id 'twin' is already a member of the cluster (at [127.0.0.1]:" + port + ")")
          .withMessageContaining("give each node its own --node-id");
      await().atMost(JOIN).until(() -> hazelcastMembers(witness) == 2);
      await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(3)).until(seen::isEmpty);
      assertThat(witness.members()).containsExactly("twin", "witness");

      // A restarted pod: the old incarnation dies (SIGKILL) while the new one waits, which then starts; the
      // others see the old one leave and the new one join.
      CompletableFuture<KilnRuntime> restarted = start("twin", join);
      await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> !restarted.isDone());
      nodes.kill("twin");
      KilnRuntime rt = restarted.get(JOIN.toSeconds(), TimeUnit.SECONDS);
      await().atMost(JOIN).until(() -> alive(rt).equals(List.of("twin", "witness"))
          && alive(witness).equals(List.of("twin", "witness")));
      assertThat(seen).containsExactly("-twin", "+twin");
    }
  }
}
