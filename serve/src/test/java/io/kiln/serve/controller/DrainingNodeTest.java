package io.kiln.serve.controller;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.serve.DeploymentStatus;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A node draining to leave ({@code ServeController.drainThisNode}) gets no new pool from the leader's controller,
 * and the pool it runs is neither retired nor, once it closed it, re-created there, while the deployment keeps
 * serving on the other node; a controller started again on that node id clears the mark.
 */
@Tag("slow")
class DrainingNodeTest {

  @Test
  void theControllerLeavesADrainingNodesPoolToItAndCreatesNoneThere() {
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      nodes.apply(ServeNodes.identity("echo", "1", "pool: {workers_per_node: 1}"));
      nodes.awaitReady("echo", "1");
      await().atMost(ServeNodes.WAIT).until(() -> nodes.hostedManagers("echo").get("node-b").size() == 1);
      ServeNodes.Node b = nodes.node("node-b");

      result(b.serve().drainThisNode());
      result(b.client().leave("echo", "1", "node-b"));
      await().atMost(ServeNodes.WAIT).until(() -> nodes.leader().board().pools("echo", "1").stream()
          .anyMatch(PoolLoad::leaving));
      // Many passes (one every 100 ms, the drain grace 300 ms): the leaving pool is not retired, it serves on.
      await().during(Duration.ofSeconds(1)).atMost(ServeNodes.WAIT)
          .until(() -> nodes.hostedManagers("echo").get("node-b").size() == 1);
      assertThat(ServeNodes.echoes(result(nodes.sendTo("echo", "1", "node-b", ServeNodes.row(7))), 7)).isTrue();

      String name = PoolNames.poolManager("echo", "1", "node-b");
      result(b.runtime().kill(result(b.runtime().getActor(PoolManager.NAMESPACE, name, PoolManager.class)), false));
      await().during(Duration.ofSeconds(1)).atMost(ServeNodes.WAIT)
          .until(() -> nodes.hostedManagers("echo").get("node-b").isEmpty());
      DeploymentStatus status = nodes.awaitPhase("echo", DeploymentStatus.Phase.READY);
      assertThat(status.servingVersion()).isEqualTo("1");
      assertThat(status.pools()).extracting(DeploymentStatus.PoolState::node).containsExactly("node-a");

      result(b.serve().start()); // as a restarted node of that id would: the mark goes, the pool comes back
      await().atMost(ServeNodes.WAIT).until(() -> nodes.hostedManagers("echo").get("node-b").size() == 1);
      assertThat(nodes.hostedManagers("echo").get("node-a")).isEqualTo(List.of(PoolNames.poolManager("echo", "1",
          "node-a")));
    }
  }
}
