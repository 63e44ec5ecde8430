package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentStatus.PoolState;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code pool.num_workers}: a cluster-wide total the controller spreads over the nodes, and moves as they change. */
class NumWorkersTest {

  private static final String FOUR = """
      pool:
        num_workers: 4
        worker_resources: {CPU: 1}
      """;

  @Test
  void theTotalIsSpreadOverTheNodesAndReplannedWhenOneJoinsAndLeaves() {
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b", "node-c")) {
      nodes.apply(ServeNodes.identity("total", "1", FOUR));
      nodes.awaitReady("total", "1");
      awaitWorkers(nodes, Map.of("node-a", 2, "node-b", 1, "node-c", 1));
      assertThat(nodes.poolActors("total")).hasSize(3 + 4); // three managers, four workers

      try (Traffic traffic = new Traffic(nodes, nodes.follower(), "total", 2)) {
        traffic.awaitMore(20);
        nodes.start("node-d", ServeNodes.NODE, Map.of());
        // Four nodes: one each; node-a gives one back.
        awaitWorkers(nodes, Map.of("node-a", 1, "node-b", 1, "node-c", 1, "node-d", 1));
        traffic.awaitMore(20);
        traffic.close();
        // Moving a worker from node-a to the new node lost no request.
        assertThat(traffic.failures()).isEmpty();
      }
      // A node leaving (here killed, without traffic: what it was running is lost with it) gives its share back.
      nodes.crash("node-d");
      awaitWorkers(nodes, Map.of("node-a", 2, "node-b", 1, "node-c", 1));
      assertThat(nodes.status("total").orElseThrow().phase()).isEqualTo(DeploymentStatus.Phase.READY);
    }
  }

  /** Waits until the status shows exactly these nodes' pools, ready, each running its share. */
  private static void awaitWorkers(ServeNodes nodes, Map<String, Integer> want) {
    await().atMost(ServeNodes.WAIT).until(() -> {
      Map<String, Integer> seen = new LinkedHashMap<>();
      for (PoolState p : nodes.status("total").orElseThrow().pools()) {
        if (!p.ready() || p.workers() != p.targetWorkers()) {
          return false;
        }
        seen.put(p.node(), p.targetWorkers());
      }
      return seen.equals(want);
    });
  }
}
