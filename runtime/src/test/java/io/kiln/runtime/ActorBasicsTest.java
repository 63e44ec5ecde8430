package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.testing.TestNodes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class ActorBasicsTest {

  static KilnRuntime runtime;

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("basics", Resources.cpu(4).withGpu(4));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  @Test
  void callsReturnFuturesWithResults() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-1").remote());
    assertThat(result(c.call(Counter::add, 2))).isEqualTo(2);
    assertThat(result(c.call(Counter::add, 3))).isEqualTo(5);
    result(c.run(Counter::reset));
    assertThat(result(c.call(Counter::get))).isZero();
    assertThat(result(c.call(Counter::echo, "héllo"))).isEqualTo("héllo");
  }

  @Test
  void callsFromOneCallerRunInOrder() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-order").remote());
    List<CompletionStage<Integer>> results = new ArrayList<>();
    for (int i = 1; i <= 200; i++) {
      results.add(c.call(Counter::add, 1));
    }
    for (int i = 0; i < results.size(); i++) {
      assertThat(result(results.get(i))).isEqualTo(i + 1);
    }
  }

  @Test
  void applicationExceptionFailsTheCallButNotTheActor() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-2").remote());
    Throwable t = failure(c.call(Counter::failWith, "bad input"));
    assertThat(t).isInstanceOf(IllegalArgumentException.class).hasMessage("bad input");
    assertThat(result(c.call(Counter::add, 1))).isEqualTo(1);
    assertThat(result(c.info()).state()).isEqualTo(ActorState.ALIVE);
  }

  @Test
  void actorContextExposesNodeAndGpuIndices() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-3")
        .resources(Resources.gpu(2)).remote());
    assertThat(result(c.call(Counter::node))).isEqualTo("basics");
    assertThat(result(c.call(Counter::gpus))).hasSize(2).doesNotHaveDuplicates();
    result(runtime.kill(c, false));
  }

  @Test
  void killedActorFailsCallsWithActorDied() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-4").remote());
    result(runtime.kill(c, false));
    Throwable t = failure(c.call(Counter::get));
    assertThat(t).isInstanceOf(ActorDiedException.class).hasMessageContaining("killed");
    assertThat(result(c.info()).state()).isEqualTo(ActorState.DEAD);
    assertThat(result(c.info()).deathCause()).contains("killed");
  }

  @Test
  void killClosesAnAutoCloseableActor() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-close").remote());
    result(runtime.kill(c, false));
    org.awaitility.Awaitility.await().until(() -> TestActors.closed("basics-close") == 1);
  }

  @Test
  void callTimeoutFailsWithCallTimeoutException() {
    TestActors.Probe probe = new TestActors.Probe(1);
    ActorHandle<TestActors.Overlap> o = result(runtime.actor(TestActors.Overlap::new, probe).remote());
    Throwable t = failure(o.withTimeout(Duration.ofMillis(200)).call(TestActors.Overlap::hold));
    assertThat(t).isInstanceOf(CallTimeoutException.class);
    probe.gate.countDown();
  }

  @Test
  void fullMailboxRefusesAtOnce() {
    TestActors.Probe probe = new TestActors.Probe(1);
    ActorHandle<TestActors.Overlap> o = result(runtime.actor(TestActors.Overlap::new, probe)
        .with(b -> b.maxPendingCalls(2)).remote());
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    calls.add(o.call(TestActors.Overlap::hold));
    org.awaitility.Awaitility.await().until(() -> probe.now.get() == 1); // one runs
    calls.add(o.call(TestActors.Overlap::hold)); // two wait
    calls.add(o.call(TestActors.Overlap::hold));
    Throwable t = failure(o.call(TestActors.Overlap::hold));
    assertThat(t).isInstanceOf(ActorUnavailableException.class).hasMessageContaining("max_pending_calls");
    probe.gate.countDown();
    assertThat(result(calls.get(0))).isEqualTo(1);
  }

  @Test
  void lambdaActorMethodsWorkLocally() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "basics-lambda").remote());
    int base = 40;
    int value = result(c.call(x -> x.add(base + 2)));
    assertThat(value).isEqualTo(42);
  }
}
