package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.TestActors.FlakyConstructor;
import io.kiln.runtime.TestActors.Overlap;
import io.kiln.runtime.TestActors.Probe;
import io.kiln.runtime.testing.TestNodes;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("slow")
class ActorRestartTest {

  static KilnRuntime runtime;

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("restarts", Resources.cpu(4));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  @Test
  void fatalErrorsRestartUntilMaxRestartsThenTheActorIsDead() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "restart-1").name("restart-1").maxRestarts(2).remote());
    assertThat(result(c.call(Counter::add, 5))).isEqualTo(5);

    assertThat(failure(c.call(Counter::crash))).isInstanceOf(ActorDiedException.class);
    // Restarted: the constructor ran again, so the state is fresh.
    assertThat(result(c.call(Counter::get))).isZero();
    assertThat(result(c.call(Counter::restarts))).isEqualTo(1);

    assertThat(failure(c.call(Counter::crash))).isInstanceOf(ActorDiedException.class);
    assertThat(result(c.call(Counter::restarts))).isEqualTo(2);

    Throwable last = failure(c.call(Counter::crash));
    assertThat(last).isInstanceOf(ActorDiedException.class).hasMessageContaining("asked to crash");
    Throwable after = failure(c.call(Counter::get));
    assertThat(after).isInstanceOf(ActorDiedException.class).hasMessageContaining("after 2 restarts");
    assertThat(TestActors.constructed("restart-1")).isEqualTo(3);
    assertThat(result(c.info()).state()).isEqualTo(ActorState.DEAD);
    // The name is free again.
    await().untilAsserted(() -> assertThat(failure(runtime.getActor("default", "restart-1", Counter.class)))
        .isInstanceOf(ActorNotFoundException.class));
  }

  @Test
  void noRestartsMeansTheFirstFatalErrorKills() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "restart-2").remote());
    assertThat(failure(c.call(Counter::crash))).isInstanceOf(ActorDiedException.class);
    assertThat(failure(c.call(Counter::get))).isInstanceOf(ActorDiedException.class);
    assertThat(TestActors.constructed("restart-2")).isEqualTo(1);
  }

  @Test
  void constructorFailuresCountAsRestarts() {
    ActorHandle<FlakyConstructor> ok = result(runtime.actor(FlakyConstructor::new, "flaky-ok", 2).maxRestarts(2).remote());
    assertThat(result(ok.call(FlakyConstructor::ping))).isEqualTo("pong");
    assertThat(TestActors.constructed("flaky-ok")).isEqualTo(3);

    Throwable t = failure(runtime.actor(FlakyConstructor::new, "flaky-dead", 5).maxRestarts(1).remote());
    assertThat(t).isInstanceOf(ActorDiedException.class).hasMessageContaining("constructor failure 2");
  }

  @Test
  void aConstructorThatKeepsFailingIsRetriedAfterAGrowingWaitNotBackToBack() {
    long start = System.nanoTime();
    Throwable t = failure(runtime.actor(FlakyConstructor::new, "flaky-backoff", 100).maxRestarts(4).remote());
    long ms = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(t).isInstanceOf(ActorDiedException.class).hasMessageContaining("constructor failure 5");
    assertThat(TestActors.constructed("flaky-backoff")).isEqualTo(5);
    assertThat(ms).as("waits of 100, 200, 400 and 800 ms between the five attempts").isGreaterThanOrEqualTo(1500);
  }

  @Test
  void killWithRestartAllowedReconstructs() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "restart-kill").maxRestarts(1).remote());
    result(c.call(Counter::add, 3));
    result(runtime.kill(c, true));
    await().untilAsserted(() -> assertThat(result(c.call(Counter::restarts))).isEqualTo(1));
    assertThat(result(c.call(Counter::get))).isZero();
    assertThat(TestActors.closed("restart-kill")).isEqualTo(1);
  }

  @Test
  void inFlightCallsAreRetriedOnTheRestartedActorWithTaskRetries() {
    Probe probe = new Probe(1);
    ActorHandle<Overlap> o = result(runtime.actor(Overlap::new, probe).maxRestarts(1).maxTaskRetries(1).remote());
    CompletionStage<Integer> inFlight = o.call(Overlap::hold);
    await().until(() -> probe.now.get() == 1);
    result(runtime.kill(o, true));
    // The killed incarnation's call is re-sent to the new one, which runs it once the gate opens.
    await().until(() -> probe.entered.get() == 2);
    probe.gate.countDown();
    assertThat(result(inFlight)).isEqualTo(1);
  }

  @Test
  void inFlightCallsFailWithoutTaskRetries() {
    Probe probe = new Probe(1);
    ActorHandle<Overlap> o = result(runtime.actor(Overlap::new, probe).maxRestarts(1).remote());
    CompletionStage<Integer> inFlight = o.call(Overlap::hold);
    await().until(() -> probe.now.get() == 1);
    result(runtime.kill(o, true));
    assertThat(failure(inFlight)).isInstanceOf(ActorDiedException.class).hasMessageContaining("while running");
    probe.gate.countDown();
  }
}
