package io.kiln.runtime.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.impl.RuntimeImpl;
import io.kiln.runtime.impl.cluster.HazelcastBackend;
import io.kiln.testkit.RunStamp;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Who may join: a head started with a cluster name and a shared secret; members that present another
 * name, no secret or the wrong secret are refused (their join fails, the head's cluster keeps its size),
 * one that knows both joins. Also that the membership and event-bus sockets bind the explicit interface.
 * In-process Hazelcast members (several per JVM), so it runs with the multi-process tests.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterSecurityIT {

  static final Duration JOIN = Duration.ofSeconds(120);
  final String name = "sec-" + UUID.randomUUID();
  final String secret = "s3cret-" + UUID.randomUUID();
  KilnRuntime head;
  int headPort;

  @BeforeAll
  void startHead() throws Exception {
    head = KilnCluster.join(new NodeOptions("head", "127.0.0.1", Resources.cpu(1), Map.of()),
        options(name, secret, List.of())).toCompletableFuture().get(JOIN.toSeconds(), TimeUnit.SECONDS);
    headPort = KilnCluster.clusterPort(head);
  }

  @AfterAll
  void stopHead() {
    if (head != null) {
      head.close();
    }
  }

  static ClusterOptions options(String name, String secret, List<String> members) {
    return new ClusterOptions(name, "127.0.0.1", 0, members, Duration.ofSeconds(1), Duration.ofSeconds(4), secret);
  }

  /** Tries to join the head; returns the failure message, or null if it joined (and then leaves again). */
  String tryJoin(String nodeId, String name, String secret) throws Exception {
    CompletableFuture<KilnRuntime> f = KilnCluster.join(new NodeOptions(nodeId, "127.0.0.1", Resources.cpu(1), Map.of()),
        options(name, secret, List.of("127.0.0.1:" + headPort))).toCompletableFuture();
    try {
      KilnRuntime rt = f.get(JOIN.toSeconds(), TimeUnit.SECONDS);
      await().atMost(JOIN).until(() -> head.clusterView().aliveNodes().size() == 2);
      rt.close();
      await().atMost(JOIN).until(() -> head.clusterView().aliveNodes().size() == 1);
      return null;
    } catch (ExecutionException e) {
      return e.getCause().getMessage();
    }
  }

  @Test
  void membersWithoutTheNameOrTheSecretAreRefusedAndTheClusterKeepsItsSize() throws Exception {
    // Each attempt counted: admitted, refused at join, or wrong (a stranger admitted, the insider refused, or a
    // join that neither joined nor failed the way a refusal does).
    int attempts = 0;
    int admitted = 0;
    int refused = 0;
    int sizeAfterRefusals = -1;
    java.util.List<String> wrong = new java.util.ArrayList<>();
    for (String[] a : new String[][] {{"other-name", "not-" + name, secret, "refused"}, {"no-secret", name, null, "refused"},
        {"wrong-secret", name, secret + "x", "refused"}, {"insider", name, secret, "admitted"}}) {
      if (a[0].equals("insider")) {
        sizeAfterRefusals = head.clusterView().aliveNodes().size();
        assertThat(head.clusterView().aliveNodes()).extracting(n -> n.nodeId()).containsExactly("head");
      }
      attempts++;
      String failure;
      try {
        failure = tryJoin(a[0], a[1], a[2]);
      } catch (Exception | AssertionError e) {
        wrong.add(a[0] + ": " + e);
        continue;
      }
      String outcome = failure == null ? "admitted" : failure.contains("no member answered") ? "refused" : "other";
      if (outcome.equals("admitted")) {
        admitted++;
      } else if (outcome.equals("refused")) {
        refused++;
      }
      if (!outcome.equals(a[3])) {
        wrong.add(a[0] + ": " + outcome + (failure == null ? "" : " (" + failure + ")"));
      }
    }
    String json = "{\"scenario\":\"cluster-admission\",\"attempts\":" + attempts + ",\"refused\":" + refused
        + ",\"admitted\":" + admitted + ",\"wrongOutcomes\":" + wrong.size() + ",\"clusterSizeAfterRefusals\":"
        + sizeAfterRefusals + "," + RunStamp.jsonMembers() + "}";
    java.nio.file.Path out = java.nio.file.Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    java.nio.file.Files.createDirectories(out);
    java.nio.file.Files.writeString(out.resolve("cluster-admission.json"), json);
    System.out.println("RELIABILITY cluster-admission " + json);
    assertThat(wrong).as("joins with the wrong outcome").isEmpty();
    assertThat(refused).isEqualTo(3);
    assertThat(admitted).isEqualTo(1);
  }

  /**
   * Vert.x carries Serializable bodies (BigInteger, BigDecimal by default) across the cluster with Java
   * serialization, and decodes them with the same class check; a Kiln node refuses every class both ways.
   */
  @Test
  void theClusteredEventBusCarriesNoJavaSerializedBody() {
    var bus = head.vertx().eventBus();
    for (Object body : List.of(java.math.BigInteger.TEN, java.math.BigDecimal.ONE, new java.util.ArrayList<String>())) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> bus.send("kiln.test.nowhere", body))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("No message codec");
    }
  }

  @Test
  void membershipAndEventBusBindTheExplicitInterface() {
    var hz = ((HazelcastBackend) ((RuntimeImpl) head).backend()).hazelcast();
    assertThat(hz.getCluster().getLocalMember().getAddress().getHost()).isEqualTo("127.0.0.1");
    assertThat(hz.getConfig().getNetworkConfig().getInterfaces().getInterfaces()).containsExactly("127.0.0.1");
    assertThat(hz.getConfig().getNetworkConfig().getJoin().getMulticastConfig().isEnabled()).isFalse();
    assertThat(hz.getConfig().getProperty("hazelcast.socket.bind.any")).isEqualTo("false");
    var nodeInfo = ((io.vertx.core.internal.VertxInternal) head.vertx()).clusterManager().getNodeInfo();
    assertThat(nodeInfo.host()).as("event bus host").isEqualTo("127.0.0.1");
  }
}
