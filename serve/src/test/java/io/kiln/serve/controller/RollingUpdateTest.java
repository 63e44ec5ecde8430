package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.Phase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Versioned rolling updates under continuous traffic, and an update whose model does not load. */
@Tag("slow")
class RollingUpdateTest {

  private static final String POOL = """
      pool:
        workers_per_node: 2
        worker_resources: {CPU: 1}
      """;

  @Test
  void rollingUpdateUnderTrafficFailsNoRequest() {
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      nodes.apply(ServeNodes.identity("echo", "1", POOL));
      nodes.awaitReady("echo", "1");
      Set<String> v1Ids = ids(nodes.poolActors("echo"));
      assertThat(v1Ids).hasSize(6); // a manager and two workers on each node

      try (Traffic traffic = new Traffic(nodes, nodes.follower(), "echo", 4)) {
        traffic.awaitMore(50);
        nodes.apply(ServeNodes.identity("echo", "2", POOL));
        nodes.awaitReady("echo", "2");
        awaitOnlyVersion(nodes, "echo", "2");
        traffic.awaitMore(50);
        traffic.close();
        assertThat(traffic.failures()).isEmpty();
        assertThat(traffic.answeredBy("1")).isPositive();
        assertThat(traffic.answeredBy("2")).isPositive();
      }

      List<ActorInfo> v2 = nodes.poolActors("echo");
      assertThat(v2).hasSize(6).allSatisfy(a -> assertThat(a.name()).startsWith(PoolNames.prefix("echo", "2")));
      assertThat(ids(v2)).doesNotContainAnyElementsOf(v1Ids); // nothing of v1 was adopted
      DeploymentStatus s = nodes.status("echo").orElseThrow();
      assertThat(s.pools()).extracting(DeploymentStatus.PoolState::version).containsOnly("2");
      assertThat(s.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("node-a", "node-b");
    }
  }

  /** The new version's workers need resources the old one holds: the old pool shrinks to make room. */
  @Test
  void rollingUpdateOnAFullNodeFailsNoRequest() {
    try (ServeNodes nodes = new ServeNodes()) {
      nodes.start("node-a", Resources.cpu(2), Map.of());
      nodes.apply(ServeNodes.identity("echo", "1", POOL));
      nodes.awaitReady("echo", "1");

      try (Traffic traffic = new Traffic(nodes, nodes.follower(), "echo", 3)) {
        traffic.awaitMore(30);
        nodes.apply(ServeNodes.identity("echo", "2", POOL));
        nodes.awaitReady("echo", "2");
        awaitOnlyVersion(nodes, "echo", "2");
        traffic.awaitMore(30);
        traffic.close();
        assertThat(traffic.failures()).isEmpty();
      }
      // Once the old version is gone, the new one gets its second worker.
      await().atMost(ServeNodes.WAIT).until(() -> nodes.status("echo").orElseThrow().pools().stream()
          .allMatch(p -> p.workers() == 2));
      assertThat(nodes.leader().runtime().localNode().available().unitsOf(Resources.CPU)).isZero();
    }
  }

  @Test
  void aVersionWhoseModelDoesNotLoadFailsAndTheOldOneKeepsServing(@TempDir Path dir) throws Exception {
    Path broken = Files.createDirectories(dir.resolve("broken"));
    Files.write(broken.resolve("model.pt"), "this is not a TorchScript archive".getBytes());
    String v2 = """
        deployments:
          - name: echo
            version: "2"
            model:
              uri: %s
              engine: PyTorch
              inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
            pool:
              workers_per_node: 1
              max_restarts: 0
        """.formatted(broken);
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      nodes.apply(ServeNodes.identity("echo", "1", POOL));
      nodes.awaitReady("echo", "1");

      try (Traffic traffic = new Traffic(nodes, nodes.follower(), "echo", 2)) {
        traffic.awaitMore(20);
        nodes.apply(v2);
        DeploymentStatus failed = nodes.awaitPhase("echo", Phase.FAILED);
        assertThat(failed.version()).isEqualTo("2");
        assertThat(failed.servingVersion()).isEqualTo("1");
        assertThat(failed.message()).contains("version 2 failed").contains("version 1 keeps serving");
        traffic.awaitMore(20);
        traffic.close();
        assertThat(traffic.failures()).isEmpty();
        assertThat(traffic.answeredBy("2")).isZero();
      }
      // The failed version's pools are removed and not tried again until it is applied again.
      await().during(Duration.ofSeconds(1)).atMost(ServeNodes.WAIT).until(() -> nodes.poolActors("echo").stream()
          .allMatch(a -> a.name().startsWith(PoolNames.prefix("echo", "1"))));
      assertThat(nodes.status("echo").orElseThrow().phase()).isEqualTo(Phase.FAILED);
      assertThat(nodes.status("echo").orElseThrow().failure()).contains("did not load");
      assertThat(ServeNodes.echoes(nodes.infer("echo", ServeNodes.row(3)), 3)).isTrue();

      // A new leader reads the failure from the status: it does not try the broken version again.
      nodes.crash("node-a");
      await().atMost(ServeNodes.WAIT).until(() -> nodes.leader().id().equals("node-b"));
      await().during(Duration.ofSeconds(1)).atMost(ServeNodes.WAIT).until(() -> nodes.poolActors("echo").stream()
          .allMatch(a -> a.name().startsWith(PoolNames.prefix("echo", "1"))));
      DeploymentStatus afterFailover = nodes.awaitPhase("echo", Phase.FAILED);
      assertThat(afterFailover.servingVersion()).isEqualTo("1");
      assertThat(afterFailover.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("node-b");
      assertThat(ServeNodes.echoes(nodes.infer("echo", ServeNodes.row(4)), 4)).isTrue();

      // The failed version itself, fixed under the same version: its pools are gone, so nothing keeps the old model.
      nodes.apply(ServeNodes.identity("echo", "2", POOL));
      nodes.awaitReady("echo", "2");
      assertThat(nodes.infer("echo", ServeNodes.row(5)).modelVersion()).isEqualTo("2");

      // Or going back is another apply: the old version again.
      nodes.apply(ServeNodes.identity("echo", "1", POOL));
      nodes.awaitReady("echo", "1");
    }
  }

  static void awaitOnlyVersion(ServeNodes nodes, String name, String version) {
    await().atMost(ServeNodes.WAIT).until(() -> nodes.poolActors(name).stream()
        .allMatch(a -> a.name().startsWith(PoolNames.prefix(name, version))));
  }

  private static Set<String> ids(List<ActorInfo> actors) {
    return actors.stream().map(ActorInfo::actorId).collect(Collectors.toSet());
  }
}
