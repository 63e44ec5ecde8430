package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.SharedStore;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The controller's leader dies, or a node with a pool does: the survivors converge on the desired state. */
@Tag("slow")
class FailoverTest {

  private static final String ONE_WORKER = """
      pool:
        workers_per_node: 1
      """;

  /**
   * The leader is killed the moment the first pool manager's name is claimed in the registry: it has
   * started creating pools on the other nodes and not finished. The next leader must finish the job from
   * the same desired state, with exactly one manager per node: none twice, none lost, none left running
   * unregistered. (The leader's own node hosts no pool here, so what dies is only the controller.)
   */
  @Test
  void leaderKilledMidReconcileTheNextLeaderConverges() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", ServeNodes.NODE, Map.of());
      for (String id : List.of("node-b", "node-c", "node-d")) {
        nodes.start(id, ServeNodes.NODE, Map.of("serve", "yes"));
      }
      assertThat(nodes.leader().id()).isEqualTo("node-a");
      AtomicBoolean crashed = new AtomicBoolean();
      SharedStore<JsonNode> registry = nodes.node("node-b").runtime().store("kiln.actors", JsonNode.class);
      String prefix = PoolManager.NAMESPACE + "/" + PoolNames.prefix("echo", "1");
      String listener = registry.addListener((key, entry) -> {
        if (key.startsWith(prefix) && !key.contains("/worker-") && entry != null && crashed.compareAndSet(false, true)) {
          nodes.crash("node-a");
        }
      });
      try {
        nodes.apply(ServeNodes.identity("echo", "1", """
            pool:
              workers_per_node: 1
              node_selector: {serve: "yes"}
            """));
        await().atMost(ServeNodes.WAIT).untilTrue(crashed);
      } finally {
        registry.removeListener(listener);
      }

      await().atMost(ServeNodes.WAIT).until(() -> nodes.leader().id().equals("node-b"));
      DeploymentStatus s = nodes.awaitReady("echo", "1");
      assertThat(s.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("node-b", "node-c", "node-d");
      assertThat(nodes.managers("echo")).extracting(ActorInfo::nodeId)
          .containsExactlyInAnyOrder("node-b", "node-c", "node-d");
      // What the nodes actually run: one manager each, whatever the registry says.
      assertThat(nodes.hostedManagers("echo")).isEqualTo(Map.of(
          "node-b", List.of(PoolNames.poolManager("echo", "1", "node-b")),
          "node-c", List.of(PoolNames.poolManager("echo", "1", "node-c")),
          "node-d", List.of(PoolNames.poolManager("echo", "1", "node-d"))));
      // And the board hears from those managers only.
      List<String> registered = nodes.managers("echo").stream().map(ActorInfo::actorId).toList();
      assertThat(nodes.follower().board().pools("echo", "1")).hasSize(3)
          .allSatisfy(l -> assertThat(registered).contains(l.managerId()));
      for (int i = 0; i < 10; i++) {
        assertThat(ServeNodes.echoes(nodes.infer("echo", ServeNodes.row(i)), i)).isTrue();
      }
    }
  }

  /** The leader dies while a new version warms: the next leader finishes the rollout; no request fails. */
  @Test
  void leaderKilledMidRolloutTheNextLeaderFinishesIt() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", ServeNodes.NODE, Map.of());
      nodes.start("node-b", ServeNodes.NODE, Map.of("serve", "yes"));
      nodes.start("node-c", ServeNodes.NODE, Map.of("serve", "yes"));
      String pool = """
          pool:
            workers_per_node: 2
            node_selector: {serve: "yes"}
          """;
      nodes.apply(ServeNodes.identity("echo", "1", pool));
      nodes.awaitReady("echo", "1");
      AtomicBoolean crashed = new AtomicBoolean();
      SharedStore<JsonNode> registry = nodes.node("node-b").runtime().store("kiln.actors", JsonNode.class);
      String prefix = PoolManager.NAMESPACE + "/" + PoolNames.prefix("echo", "2");
      String listener = registry.addListener((key, entry) -> {
        if (key.startsWith(prefix) && entry != null && crashed.compareAndSet(false, true)) {
          nodes.crash("node-a");
        }
      });
      try (Traffic traffic = new Traffic(nodes, nodes.node("node-c"), "echo", 3)) {
        traffic.awaitMore(20);
        nodes.apply(ServeNodes.identity("echo", "2", pool));
        await().atMost(ServeNodes.WAIT).untilTrue(crashed);
        nodes.awaitReady("echo", "2");
        RollingUpdateTest.awaitOnlyVersion(nodes, "echo", "2");
        traffic.awaitMore(20);
        traffic.close();
        assertThat(traffic.failures()).isEmpty();
      } finally {
        registry.removeListener(listener);
      }
      assertThat(nodes.leader().id()).isEqualTo("node-b");
      assertThat(nodes.hostedManagers("echo")).isEqualTo(Map.of(
          "node-b", List.of(PoolNames.poolManager("echo", "2", "node-b")),
          "node-c", List.of(PoolNames.poolManager("echo", "2", "node-c"))));
    }
  }

  @Test
  void aPoolWhoseNodeDiesIsRecreatedOnANewlySelectedNode() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", ServeNodes.NODE, Map.of());
      nodes.start("node-b", ServeNodes.NODE, Map.of("zone", "x"));
      nodes.apply(ServeNodes.identity("zoned", "1", """
          pool:
            workers_per_node: 1
            node_selector: {zone: x}
          """));
      nodes.awaitReady("zoned", "1");

      nodes.crash("node-b");
      DeploymentStatus lost = nodes.awaitPhase("zoned", Phase.UNSCHEDULABLE);
      assertThat(lost.message()).contains("no node selected");

      nodes.start("node-c", ServeNodes.NODE, Map.of("zone", "x"));
      DeploymentStatus back = nodes.awaitReady("zoned", "1");
      assertThat(back.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("node-c");
      assertThat(ServeNodes.echoes(nodes.infer("zoned", ServeNodes.row(4)), 4)).isTrue();
    }
  }

  /** A node joining a READY deployment gets a pool; serving never stops while it warms. */
  @Test
  void aJoiningNodeGetsAPoolWhileTheOthersKeepServing() {
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      nodes.apply(ServeNodes.identity("echo", "1", ONE_WORKER));
      nodes.awaitReady("echo", "1");
      try (Traffic traffic = new Traffic(nodes, nodes.follower(), "echo", 2)) {
        traffic.awaitMore(20);
        nodes.start("node-c", ServeNodes.NODE, Map.of());
        await().atMost(ServeNodes.WAIT).until(() -> nodes.status("echo").orElseThrow().pools().size() == 3
            && nodes.status("echo").orElseThrow().pools().stream().allMatch(DeploymentStatus.PoolState::ready));
        traffic.awaitMore(20);
        traffic.close();
        assertThat(traffic.failures()).isEmpty();
      }
      assertThat(nodes.status("echo").orElseThrow().phase()).isEqualTo(Phase.READY);
    }
  }
}
