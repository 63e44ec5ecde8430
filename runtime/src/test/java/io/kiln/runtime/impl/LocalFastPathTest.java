package io.kiln.runtime.impl;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.ExecutionMode;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.Resources;
import io.kiln.runtime.testing.TestNodes;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Calls to an actor on the caller's own node skip the event bus; these pin the edges where that path
 * could differ from the event-bus one: kill and restart with calls still queued, deadlines without a
 * timer per call, and where the caller's future completes.
 */
class LocalFastPathTest {

  static KilnRuntime runtime;
  static final AtomicInteger actorMessages = new AtomicInteger();

  /** Counts its calls; {@code hold} blocks until the test opens the gate it was built with. */
  public static final class Gated {
    private final CountDownLatch gate;
    private final AtomicInteger entered;
    private int calls;

    public Gated(CountDownLatch gate, AtomicInteger entered) {
      this.gate = gate;
      this.entered = entered;
    }

    public int hold() throws InterruptedException {
      entered.incrementAndGet();
      if (!gate.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("gate never opened");
      }
      return ++calls;
    }

    public int next() {
      return ++calls;
    }
  }

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("fastpath", Resources.cpu(4));
    runtime.vertx().eventBus().addOutboundInterceptor(ctx -> {
      if (ctx.message().address().startsWith("kiln.actor.")) {
        actorMessages.incrementAndGet();
      }
      ctx.next();
    });
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  @Test
  void callsToALocalActorSendNoEventBusMessage() {
    ActorHandle<Gated> g = result(runtime.actor(Gated::new, new CountDownLatch(0), new AtomicInteger()).remote());
    int before = actorMessages.get();
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      calls.add(g.call(Gated::next));
    }
    for (int i = 0; i < calls.size(); i++) {
      assertThat(result(calls.get(i))).isEqualTo(i + 1); // in order
    }
    assertThat(actorMessages.get()).isEqualTo(before);
  }

  @Test
  void killWhileLocalCallsAreQueuedFailsThemWithActorDied() {
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger entered = new AtomicInteger();
    ActorHandle<Gated> g = result(runtime.actor(Gated::new, gate, entered).remote());
    CompletionStage<Integer> running = g.call(Gated::hold);
    await().until(() -> entered.get() == 1);
    List<CompletionStage<Integer>> queued = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      queued.add(g.call(Gated::next));
    }
    result(runtime.kill(g, false));

    assertThat(failure(running)).isInstanceOf(ActorDiedException.class).hasMessageContaining("died while running");
    for (CompletionStage<Integer> q : queued) {
      assertThat(failure(q)).isInstanceOf(ActorDiedException.class).hasMessageContaining("is dead: killed");
    }
    assertThat(failure(g.call(Gated::next))).isInstanceOf(ActorDiedException.class)
        .hasMessageContaining("is dead: killed");
    gate.countDown();
  }

  @Test
  void restartWithCallsInTheMailboxRunsThemInOrderOnTheNewIncarnation() {
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger entered = new AtomicInteger();
    ActorHandle<Gated> g = result(runtime.actor(Gated::new, gate, entered).maxRestarts(1).remote());
    CompletionStage<Integer> running = g.call(Gated::hold);
    await().until(() -> entered.get() == 1);
    List<CompletionStage<Integer>> queued = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      queued.add(g.call(Gated::next));
    }
    result(runtime.kill(g, true));

    assertThat(failure(running)).isInstanceOf(ActorDiedException.class).hasMessageContaining("died while running");
    for (int i = 0; i < queued.size(); i++) {
      assertThat(result(queued.get(i))).isEqualTo(i + 1); // fresh state, original order, no retry spent
    }
    assertThat(result(g.info()).restarts()).isEqualTo(1);
    gate.countDown();
  }

  @Test
  void queuedLocalCallsTimeOutWithTheHandlesMessageAndTheActorCarriesOn() {
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger entered = new AtomicInteger();
    ActorHandle<Gated> g = result(runtime.actor(Gated::new, gate, entered).remote());
    ActorHandle<Gated> impatient = g.withTimeout(Duration.ofMillis(300));
    CompletionStage<Integer> running = impatient.call(Gated::hold);
    await().until(() -> entered.get() == 1);
    List<CompletionStage<Integer>> queued = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      queued.add(impatient.call(Gated::next));
    }
    String expected = "no reply from actor " + impatient + " within PT0.3S";
    assertThat(failure(running)).isInstanceOf(CallTimeoutException.class).hasMessage(expected);
    for (CompletionStage<Integer> q : queued) {
      assertThat(failure(q)).isInstanceOf(CallTimeoutException.class).hasMessage(expected);
    }
    gate.countDown();
    // The timed-out calls still ran (their answers went nowhere), as with an event-bus request.
    assertThat(result(g.call(Gated::next))).isEqualTo(202);
  }

  @Test
  void aCallerOnAVertxContextGetsItsAnswerThere() throws Exception {
    for (ExecutionMode mode : ExecutionMode.values()) {
      CountDownLatch gate = new CountDownLatch(1);
      ActorHandle<Gated> g = result(runtime.actor(Gated::new, gate, new AtomicInteger()).mode(mode).remote());
      Context caller = runtime.vertx().getOrCreateContext();
      CompletableFuture<Context> answeredOn = new CompletableFuture<>();
      caller.runOnContext(v -> g.call(Gated::next).whenComplete((n, e) -> answeredOn.complete(Vertx.currentContext())));
      assertThat(result(answeredOn)).isSameAs(caller);

      // From a plain thread: the callback is attached before the answer can come (the gate is shut).
      CompletableFuture<Boolean> onVertxThread = new CompletableFuture<>();
      CompletionStage<Integer> held = g.call(Gated::hold);
      held.whenComplete((n, e) -> onVertxThread.complete(Context.isOnVertxThread()));
      gate.countDown();
      assertThat(result(onVertxThread)).isTrue();
    }
  }
}
