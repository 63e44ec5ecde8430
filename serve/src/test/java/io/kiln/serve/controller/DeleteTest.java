package io.kiln.serve.controller;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolLoad;
import io.kiln.serve.DeploymentStatus.Phase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** {@code kiln delete}: the pools drain (what is queued still runs), then every actor and the entry go. */
class DeleteTest {

  private static final String ONE_WORKER = """
      pool:
        workers_per_node: 1
      batching: {max_batch_size: 1, max_batch_delay_ms: 0}
      health: {period_ms: 3600000, timeout_ms: 600000}
      """;

  @Test
  void deleteDrainsQueuedRequestsThenRemovesEverything() {
    try (ServeNodes nodes = new ServeNodes("node-a", "node-b")) {
      nodes.apply(ServeNodes.identity("gone", "1", ONE_WORKER));
      nodes.apply(ServeNodes.identity("stays", "1", ONE_WORKER));
      nodes.awaitReady("gone", "1");
      nodes.awaitReady("stays", "1");

      List<CompletableFuture<InferenceResponse>> queued = new ArrayList<>();
      try (WorkerBlocker stuck = WorkerBlocker.block(nodes.leader().runtime(), "gone", "1", "node-b", 0)) {
        for (int i = 0; i < 5; i++) {
          queued.add(nodes.sendTo("gone", "1", "node-b", ServeNodes.row(i)));
        }
        await().atMost(ServeNodes.WAIT).until(() -> load(nodes, "node-b").map(l -> l.load() == 5).orElse(false));

        assertThat(result(nodes.follower().serve().delete("gone"))).isTrue();
        nodes.awaitPhase("gone", Phase.DELETING);
        await().atMost(ServeNodes.WAIT).until(() -> load(nodes, "node-b").map(PoolLoad::draining).orElse(false));
        // Draining: new requests are refused, the gateway no longer lists the model...
        assertThat(nodes.follower().serve().servingVersion("gone")).isEmpty();
        assertThat(queued).noneMatch(CompletableFuture::isDone);
      }
      // ... and what was queued runs once the worker moves again.
      await().atMost(ServeNodes.WAIT).until(() -> queued.stream().allMatch(CompletableFuture::isDone));
      for (int i = 0; i < queued.size(); i++) {
        assertThat(ServeNodes.echoes(queued.get(i).join(), i)).isTrue();
      }

      await().atMost(ServeNodes.WAIT).until(() -> nodes.poolActors("gone").isEmpty()
          && nodes.nodes().stream().allMatch(n -> !n.serve().desired().containsKey("gone")
          && !n.serve().statuses().containsKey("gone")));
      assertThat(result(nodes.leader().runtime().store("kiln.deployments", JsonNode.class).entries()))
          .containsOnlyKeys("stays");
      assertThat(nodes.status("stays").orElseThrow().phase()).isEqualTo(Phase.READY);
      assertThat(nodes.poolActors("stays")).hasSize(4);
    }
  }

  @Test
  void deletingAnUnknownDeploymentSaysSo() {
    try (ServeNodes nodes = new ServeNodes("node-a")) {
      assertThat(result(nodes.leader().serve().delete("nothing"))).isFalse();
    }
  }

  private static java.util.Optional<PoolLoad> load(ServeNodes nodes, String node) {
    return nodes.follower().board().pools("gone", "1").stream().filter(l -> l.nodeId().equals(node)).findFirst();
  }
}
