package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link LoopTurns#atTurnEnd} on a real Netty event loop: after the turn's tasks, on the same thread with the same
 * context current; nowhere else.
 */
class LoopTurnsTest {

  private static Vertx vertx;

  @BeforeAll
  static void start() {
    vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1));
  }

  @AfterAll
  static void stop() {
    vertx.close().await();
  }

  @Test
  void runsOnTheLoopAfterTheTasksQueuedInItsTurn() {
    Context context = vertx.getOrCreateContext();
    List<String> order = new CopyOnWriteArrayList<>();
    AtomicBoolean scheduled = new AtomicBoolean();
    Thread[] threads = new Thread[2];
    Context[] current = new Context[1];
    context.runOnContext(v -> {
      threads[0] = Thread.currentThread();
      for (int i = 1; i <= 3; i++) {
        String name = "task " + i;
        context.runOnContext(x -> order.add(name));
      }
      scheduled.set(LoopTurns.atTurnEnd(context, () -> {
        threads[1] = Thread.currentThread();
        current[0] = Vertx.currentContext();
        order.add("turn end");
      }));
      order.add("caller");
    });
    await().atMost(Duration.ofSeconds(30)).until(() -> order.size() == 5);
    assertThat(scheduled).isTrue();
    assertThat(order).containsExactly("caller", "task 1", "task 2", "task 3", "turn end");
    assertThat(threads[1]).isSameAs(threads[0]);
    assertThat(current[0]).as("the context current in the turn-end task").isSameAs(context);
  }

  @Test
  void offTheLoopNothingIsScheduledAndTheCallerRunsTheWorkItself() {
    Context context = vertx.getOrCreateContext();
    AtomicBoolean ran = new AtomicBoolean();
    assertThat(LoopTurns.atTurnEnd(context, () -> ran.set(true))).as("from the test's thread").isFalse();

    Context worker = ((io.vertx.core.internal.VertxInternal) vertx).createWorkerContext();
    CompletableFuture<Boolean> onWorker = new CompletableFuture<>();
    worker.runOnContext(v -> onWorker.complete(LoopTurns.atTurnEnd(worker, () -> ran.set(true))));
    assertThat(onWorker).succeedsWithin(Duration.ofSeconds(30)).as("on a worker context").isEqualTo(false);
    assertThat(ran).isFalse();
  }
}
