package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link TurnEnds} on a real Netty event loop shared by two contexts (a caller's and an actor's, as on a one-core
 * node): work for a context on this loop runs at the end of the turn, in order, each piece with its own context
 * current, and what it adds runs in the same pass; from another thread it is queued.
 */
class TurnEndsTest {

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
  void workForAContextOnThisLoopRunsAtTheTurnsEndInOrderWithItsContextCurrent() {
    Context caller = vertx.getOrCreateContext();
    Context actor = vertx.getOrCreateContext();
    List<String> order = new CopyOnWriteArrayList<>();
    List<Context> current = new CopyOnWriteArrayList<>();
    caller.runOnContext(v -> {
      TurnEnds.run(actor, () -> {
        current.add(Vertx.currentContext());
        order.add("call 1");
        // Added while the turn's end runs: in the same pass, before anything the next turn brings.
        TurnEnds.run(caller, () -> {
          current.add(Vertx.currentContext());
          order.add("answer 1");
        });
        caller.runOnContext(x -> order.add("queued by call 1"));
      });
      TurnEnds.run(actor, () -> order.add("call 2"));
      caller.runOnContext(x -> order.add("queued task"));
      order.add("caller");
    });
    await().atMost(Duration.ofSeconds(30)).until(() -> order.size() == 6);
    assertThat(order).containsExactly("caller", "queued task", "call 1", "call 2", "answer 1", "queued by call 1");
    assertThat(current).containsExactly(actor, caller);
  }

  @Test
  void workFromAnotherThreadIsQueuedToItsContext() {
    Context actor = vertx.getOrCreateContext();
    CompletableFuture<Context> ran = new CompletableFuture<>();
    TurnEnds.run(actor, () -> ran.complete(Vertx.currentContext()));
    assertThat(ran).succeedsWithin(Duration.ofSeconds(30)).isSameAs(actor);
  }

  @Test
  void aLongChainYieldsTheLoopAfterAPassAndKeepsItsOrder() {
    Context caller = vertx.getOrCreateContext();
    Context actor = vertx.getOrCreateContext();
    int links = TurnEnds.PER_PASS * 2 + 10;
    List<Integer> seen = new CopyOnWriteArrayList<>();
    AtomicInteger linksBeforeTheTask = new AtomicInteger(-1);
    CompletableFuture<Void> done = new CompletableFuture<>();
    Runnable[] link = new Runnable[1];
    AtomicInteger n = new AtomicInteger();
    link[0] = () -> {
      int i = n.getAndIncrement();
      seen.add(i);
      if (i == 0) {
        caller.runOnContext(v -> linksBeforeTheTask.set(seen.size()));
      }
      if (i + 1 < links) {
        TurnEnds.run(i % 2 == 0 ? caller : actor, link[0]);
      } else {
        done.complete(null);
      }
    };
    caller.runOnContext(v -> TurnEnds.run(actor, link[0]));
    assertThat(done).succeedsWithin(Duration.ofSeconds(30));
    assertThat(seen).hasSize(links).isSorted();
    assertThat(linksBeforeTheTask.get()).as("links run before the loop's queued task").isEqualTo(TurnEnds.PER_PASS);
  }

  @Test
  void workThatThrowsIsReportedToItsContextAndTheRestRuns() {
    Context caller = vertx.getOrCreateContext();
    Context actor = vertx.getOrCreateContext();
    AtomicReference<Throwable> reported = new AtomicReference<>();
    actor.exceptionHandler(reported::set);
    CompletableFuture<String> after = new CompletableFuture<>();
    caller.runOnContext(v -> {
      TurnEnds.run(actor, () -> {
        throw new IllegalStateException("boom");
      });
      TurnEnds.run(caller, () -> after.complete("ran"));
    });
    assertThat(after).succeedsWithin(Duration.ofSeconds(30)).isEqualTo("ran");
    await().atMost(Duration.ofSeconds(30)).until(() -> reported.get() != null);
    assertThat(reported.get()).hasMessage("boom");
  }
}
