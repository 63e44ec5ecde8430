package io.kiln.serve.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.InferenceResponse;
import io.kiln.pools.WorkerState;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Autoscaling on queued + executing requests per worker, with the delays on the test's clock: outstanding
 * requests are made to stay put by holding the only worker's thread, so each decision is deterministic.
 */
class AutoscalingTest {

  /** Between 1 and 3 workers, 2 requests each; delays of a minute that the test jumps over. */
  private static final String AUTOSCALED = """
      pool:
        workers_per_node: 3
        worker_resources: {CPU: 1}
      batching: {max_batch_size: 1, max_batch_delay_ms: 0}
      autoscaling:
        min_workers: 1
        max_workers: 3
        target_ongoing_per_worker: 2
        upscale_delay_ms: 60000
        downscale_delay_ms: 60000
      health: {period_ms: 3600000, timeout_ms: 600000}
      """;

  @Test
  void scalesUpUnderLoadAndDownWhenIdleAfterTheirDelaysWithinTheNodesResources() {
    try (ServeNodes nodes = new ServeNodes()) {
      // Two CPUs: max_workers 3 is more than the node can host.
      nodes.start("node-a", Resources.cpu(2), Map.of());
      nodes.apply(ServeNodes.identity("auto", "1", AUTOSCALED));
      DeploymentStatus ready = nodes.awaitReady("auto", "1");
      assertThat(ready.pools()).singleElement().satisfies(p -> {
        assertThat(p.workers()).isEqualTo(1);
        assertThat(p.targetWorkers()).isEqualTo(1);
      });

      List<CompletableFuture<InferenceResponse>> sent = new ArrayList<>();
      try (WorkerBlocker stuck = WorkerBlocker.block(nodes.leader().runtime(), "auto", "1", "node-a", 0)) {
        for (int i = 0; i < 6; i++) {
          sent.add(nodes.sendTo("auto", "1", "node-a", ServeNodes.row(i)));
        }
        // Six outstanding for one worker wants three, capped at the two the node can host, after the delay.
        await().atMost(ServeNodes.WAIT).until(() -> lastScaling(nodes).contains("scale up to 2"));
        assertThat(lastScaling(nodes)).contains("waiting");
        assertThat(pool(nodes).targetWorkers()).isEqualTo(1);

        nodes.clock.advance(Duration.ofSeconds(61));
        await().atMost(ServeNodes.WAIT).until(() -> pool(nodes).targetWorkers() == 2 && pool(nodes).workers() == 2);
        assertThat(lastScaling(nodes)).contains("scale up 1 -> 2").contains("6 outstanding");
        // The new worker serves the queue while worker 0 is still held.
        await().atMost(ServeNodes.WAIT).until(() -> sent.stream().filter(CompletableFuture::isDone).count() == 5);
        assertThat(nodes.poolStatus("auto", "1", "node-a").count(WorkerState.READY)).isEqualTo(2);
        assertThat(nodes.leader().runtime().localNode().available().unitsOf(Resources.CPU)).isZero();
      }
      await().atMost(ServeNodes.WAIT).until(() -> sent.stream().allMatch(CompletableFuture::isDone));
      assertThat(sent).allSatisfy(f -> assertThat(f).isCompleted().isNotCompletedExceptionally());

      // Idle now: down to min_workers, once the downscale delay has passed.
      await().atMost(ServeNodes.WAIT).until(() -> lastScaling(nodes).contains("scale down to 1"));
      assertThat(pool(nodes).targetWorkers()).isEqualTo(2);
      nodes.clock.advance(Duration.ofSeconds(61));
      await().atMost(ServeNodes.WAIT).until(() -> pool(nodes).targetWorkers() == 1 && pool(nodes).workers() == 1);
      assertThat(lastScaling(nodes)).contains("scale down 2 -> 1");
      assertThat(ServeNodes.echoes(nodes.infer("auto", ServeNodes.row(9)), 9)).isTrue();
    }
  }

  private static DeploymentStatus.PoolState pool(ServeNodes nodes) {
    return nodes.status("auto").orElseThrow().pools().get(0);
  }

  private static String lastScaling(ServeNodes nodes) {
    String s = nodes.status("auto").orElseThrow().lastScaling();
    return s == null ? "" : s;
  }
}
