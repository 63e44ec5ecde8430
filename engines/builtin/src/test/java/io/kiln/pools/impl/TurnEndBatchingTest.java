package io.kiln.pools.impl;

import static io.kiln.pools.testsupport.PoolNodes.builtin;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.engines.builtin.impl.DiagnosticModels;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.Resources;
import io.kiln.runtime.testing.TestNodes;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.internal.VertxInternal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The pool dispatcher hands a batch over at the end of its event loop's turn: requests that reach the pool manager in
 * one turn leave as one batch, even with no batch delay, on a node of one event loop (as {@code kiln up} runs pinned
 * to one core). Handed over at the first request, the idle worker would take that one alone.
 */
@Tag("slow")
class TurnEndBatchingTest {

  private static Vertx vertx;
  private static LocalCluster cluster;
  private static KilnRuntime node;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx(new VertxOptions().setPreferNativeTransport(false).setEventLoopPoolSize(1));
    cluster = LocalCluster.on(vertx);
    node = TestNodes.start(cluster, "one", PoolNodes.NODE);
    node.registerLocalService(MeterRegistry.class, new SimpleMeterRegistry());
  }

  @AfterAll
  static void stop() {
    cluster.close();
    vertx.close().await();
  }

  @Test
  void requestsThatArriveInOneTurnOfTheLoopGoToTheIdleWorkerAsOneBatch() {
    int n = 5;
    // No batch delay: the batcher takes what is queued and never waits for more, as the bench deployments do.
    PoolConfig config = PoolConfig.builder().maxBatchSize(8).maxBatchDelay(Duration.ZERO).build();
    PoolSpec spec = new PoolSpec("one-turn", "1", "one", builtin(DiagnosticModels.SLEEP), config, 1, Resources.cpu(1),
        0, new HealthSpec(Duration.ofHours(1), Duration.ofSeconds(5)));
    ActorHandle<PoolManager> m = result(PoolManager.getOrCreate(node, spec), PoolNodes.WAIT);
    PoolNodes.awaitReady(m, 1);

    ContextInternal caller = ((VertxInternal) vertx).createEventLoopContext();
    List<CompletableFuture<InferenceResponse>> answers = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      answers.add(new CompletableFuture<>());
    }
    // One task sends them all: on the one loop each call is queued for the manager in this turn, so each reaches the
    // dispatcher while the worker is idle.
    caller.runOnContext(v -> {
      for (int i = 0; i < n; i++) {
        CompletableFuture<InferenceResponse> answer = answers.get(i);
        m.callAsync(PoolManager::infer, row("t" + i, 300), 60_000L).whenComplete((r, e) -> {
          if (e != null) {
            answer.completeExceptionally(e);
          } else {
            answer.complete(r);
          }
        });
      }
    });
    await().atMost(PoolNodes.WAIT).until(() -> result(m.call(PoolManager::stats)).busyWorkers() == 1);
    assertThat(result(m.call(PoolManager::stats)).inFlightRequests()).as("requests in the first batch").isEqualTo(n);
    for (int i = 0; i < n; i++) {
      assertThat(result(answers.get(i), PoolNodes.WAIT).outputs().get(0).asFloats())
          .containsExactly(300f, 300f, 300f, 300f);
    }
    await().atMost(PoolNodes.WAIT).until(() -> result(m.call(PoolManager::stats)).completed() == n);
    assertThat(result(m.call(PoolManager::stats))).extracting("failed", "requeued").containsExactly(0L, 0L);
    result(m.callAsync(PoolManager::drain), PoolNodes.WAIT);
  }

  private static InferenceRequest row(String id, float v) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {v, v, v, v})),
        List.of(), Map.of());
  }
}
