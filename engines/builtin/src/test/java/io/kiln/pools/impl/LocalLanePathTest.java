package io.kiln.pools.impl;

import static io.kiln.pools.testsupport.PoolNodes.builtin;
import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.engines.builtin.impl.DiagnosticModels;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ModelWorker;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolStatus;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The local request path on a real node: a pool manager hands each batch straight to its worker's model thread
 * through the lane the worker published ({@link WorkerLanes}), each answer goes from there to its caller's own
 * context, and a worker killed under a lane batch has its requests re-queued and answered by its restarted
 * incarnation, whose new lane replaces the ended one.
 */
@Tag("slow")
class LocalLanePathTest {

  private static PoolNodes nodes;

  @BeforeAll
  static void start() {
    nodes = new PoolNodes("a");
  }

  @AfterAll
  static void stop() {
    nodes.close();
  }

  private static InferenceRequest row(String id, float v) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v})),
        List.of(), Map.of());
  }

  @Test
  void batchesGoThroughTheWorkersLanesAndEachAnswerReachesItsCallersOwnContext() {
    KilnRuntime node = nodes.node("a");
    PoolConfig config = PoolConfig.builder().maxBatchSize(4).maxBatchDelay(Duration.ofMillis(2)).build();
    ActorHandle<PoolManager> m = nodes.start(spec("lanes", "a", builtin("builtin:identity"), config, 2, 0), 2);
    for (int i = 0; i < 2; i++) {
      assertThat(WorkerLanes.of(node).get(PoolNames.worker("lanes", "1", "a", i))).as("worker %d's lane", i).isNotNull();
    }

    Context caller = node.vertx().getOrCreateContext();
    int n = 32;
    Map<String, InferenceResponse> answers = new ConcurrentHashMap<>();
    Map<String, Boolean> onCaller = new ConcurrentHashMap<>();
    CompletableFuture<Void> all = new CompletableFuture<>();
    caller.runOnContext(v -> {
      for (int i = 0; i < n; i++) {
        String id = "r" + i;
        m.callAsync(PoolManager::infer, row(id, i), 30_000L).whenComplete((r, e) -> {
          onCaller.put(id, Vertx.currentContext() == caller);
          if (e != null) {
            all.completeExceptionally(e);
          } else if (answers.put(id, r) == null && answers.size() == n) {
            all.complete(null);
          }
        });
      }
    });
    result(all, PoolNodes.WAIT);

    for (int i = 0; i < n; i++) {
      InferenceResponse r = answers.get("r" + i);
      assertThat(r.outputs().get(0).asFloats()).containsExactly(i, i, i, i);
      assertThat(r.parameters()).containsKeys("kiln_node", "kiln_queue_ms", "kiln_compute_ms");
    }
    assertThat(onCaller.values()).as("every answer completed on the caller's context").hasSize(n).containsOnly(true);
    await().atMost(PoolNodes.WAIT).until(() -> result(m.call(PoolManager::stats)).completed() == n);
    assertThat(result(m.call(PoolManager::stats))).extracting("failed", "requeued", "inFlightRequests")
        .containsExactly(0L, 0L, 0);
    result(m.callAsync(PoolManager::drain), PoolNodes.WAIT);
  }

  @Test
  void aWorkerKilledUnderALaneBatchHasItsRequestsRequeuedAndAnsweredByItsRestartedIncarnation() {
    KilnRuntime node = nodes.node("a");
    ActorHandle<PoolManager> m = nodes.start(spec("lane-kill", "a", builtin(DiagnosticModels.SLEEP), PoolConfig.DEFAULTS,
        1, 3), 1);
    String name = PoolNames.worker("lane-kill", "1", "a", 0);
    WorkerLanes.Lane before = WorkerLanes.of(node).get(name);
    assertThat(before).isNotNull();
    ActorHandle<ModelWorker> worker = result(node.getActor(PoolManager.NAMESPACE, name, ModelWorker.class));

    CompletableFuture<InferenceResponse> slow = m.callAsync(PoolManager::infer, row("slow", 400), 30_000L)
        .toCompletableFuture();
    await().atMost(PoolNodes.WAIT).until(() -> result(m.call(PoolManager::stats)).busyWorkers() == 1);
    result(node.kill(worker, true), PoolNodes.WAIT);

    assertThat(result(slow, PoolNodes.WAIT).outputs().get(0).asFloats()).containsExactly(400, 400, 400, 400);
    PoolStatus status = PoolNodes.awaitReady(m, 1);
    assertThat(status.stats().requeued()).as("re-queued once, not lost and not failed").isEqualTo(1);
    assertThat(status.stats().failed()).isZero();
    assertThat(status.workers().get(0).lastError()).as("failed through its lane").contains("lane");
    WorkerLanes.Lane after = WorkerLanes.of(node).get(name);
    assertThat(after).as("the restarted incarnation published its own").isNotNull().isNotSameAs(before);
    assertThat(result(m.callAsync(PoolManager::infer, row("again", 1), 30_000L)).outputs().get(0).asFloats())
        .containsExactly(1, 1, 1, 1);
    result(m.callAsync(PoolManager::drain), PoolNodes.WAIT);
  }
}
