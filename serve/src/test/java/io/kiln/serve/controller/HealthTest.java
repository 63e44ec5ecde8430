package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolNames;
import io.kiln.pools.WorkerState;
import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Health checks: a worker that stops answering on its serving path is replaced (restarted, model reloaded). */
@Tag("slow")
class HealthTest {

  @Test
  void aStuckWorkerIsReplacedAndItsRequestsStillSucceed() {
    try (ServeNodes nodes = new ServeNodes("node-a")) {
      nodes.apply(ServeNodes.identity("echo", "1", """
          pool:
            workers_per_node: 1
            max_restarts: 3
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
          health: {period_ms: 1000, timeout_ms: 1000}
          """));
      nodes.awaitReady("echo", "1");
      List<CompletableFuture<InferenceResponse>> sent = new ArrayList<>();
      try (WorkerBlocker stuck = WorkerBlocker.block(nodes.leader().runtime(), "echo", "1", "node-a", 0)) {
        for (int i = 0; i < 6; i++) {
          sent.add(nodes.sendTo("echo", "1", "node-a", ServeNodes.row(i)));
        }
        // The worker's only thread is held: the requests wait in its pool. The controller's probe waits behind
        // the stuck call, times out, and the worker is restarted under it: the stuck call fails, the batch
        // queued behind it runs on the restarted worker.
        await().atMost(ServeNodes.WAIT).until(() -> stuck.held().toCompletableFuture().isDone());
        assertThat(stuck.held().toCompletableFuture()).isCompletedExceptionally();
        assertThat(io.kiln.runtime.testing.Await.failure(stuck.held())).isInstanceOf(ActorDiedException.class);
      }
      await().atMost(ServeNodes.WAIT).until(() -> sent.stream().allMatch(CompletableFuture::isDone));
      for (int i = 0; i < sent.size(); i++) {
        assertThat(ServeNodes.echoes(sent.get(i).join(), i)).isTrue();
      }
      await().atMost(ServeNodes.WAIT).until(() -> nodes.poolStatus("echo", "1", "node-a").count(WorkerState.READY) == 1);
      ActorInfo worker = nodes.poolActors("echo").stream()
          .filter(a -> a.name().equals(PoolNames.worker("echo", "1", "node-a", 0))).findFirst().orElseThrow();
      assertThat(worker.restarts()).isPositive();
      await().atMost(ServeNodes.WAIT).until(() -> nodes.status("echo").orElseThrow().lastHealth() != null);
      assertThat(nodes.status("echo").orElseThrow().lastHealth())
          .contains("restarted stuck worker " + PoolNames.worker("echo", "1", "node-a", 0)).contains("1000 ms");
    }
  }
}
