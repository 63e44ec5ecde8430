package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.testing.TestNodes;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class NamedActorTest {

  static KilnRuntime runtime;

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("named", Resources.cpu(2));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  @Test
  void lookupByNamespaceAndName() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "named-1").name("shared").namespace("ns-a").remote());
    result(c.call(Counter::add, 7));
    ActorHandle<Counter> found = result(runtime.getActor("ns-a", "shared", Counter.class));
    assertThat(found.actorId()).isEqualTo(c.actorId());
    assertThat(result(found.call(Counter::get))).isEqualTo(7);
    assertThat(failure(runtime.getActor("ns-b", "shared", Counter.class))).isInstanceOf(ActorNotFoundException.class);
    assertThat(result(runtime.namedActors())).anyMatch(a -> a.displayName().equals("ns-a/shared")
        && a.state() == ActorState.ALIVE && a.nodeId().equals("named"));
  }

  @Test
  void sameNameInAnotherNamespaceIsAnotherActor() {
    ActorHandle<Counter> a = result(runtime.actor(Counter::new, "named-2").name("dup").namespace("x").remote());
    ActorHandle<Counter> b = result(runtime.actor(Counter::new, "named-2").name("dup").namespace("y").remote());
    assertThat(a.actorId()).isNotEqualTo(b.actorId());
  }

  @Test
  void creatingATakenNameWithoutGetIfExistsFails() {
    result(runtime.actor(Counter::new, "named-3").name("taken").remote());
    Throwable t = failure(runtime.actor(Counter::new, "named-3").name("taken").remote());
    assertThat(t).isInstanceOf(ActorNameTakenException.class).hasMessageContaining("default/taken");
  }

  @Test
  void concurrentGetOrCreateYieldsExactlyOneActor() throws Exception {
    int creators = 64;
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(16);
    List<java.util.concurrent.Future<CompletionStage<ActorHandle<Counter>>>> submitted = new ArrayList<>();
    for (int i = 0; i < creators; i++) {
      submitted.add(pool.submit(() -> {
        go.await();
        return runtime.actor(Counter::new, "race").name("race").detached().getIfExists().remote();
      }));
    }
    go.countDown();
    Set<String> ids = new HashSet<>();
    for (var f : submitted) {
      ActorHandle<Counter> h = result(f.get());
      ids.add(h.actorId());
      result(h.call(Counter::add, 1));
    }
    pool.shutdown();
    assertThat(ids).hasSize(1);
    assertThat(TestActors.constructed("race")).isEqualTo(1);
    ActorHandle<Counter> one = result(runtime.getActor("default", "race", Counter.class));
    assertThat(result(one.call(Counter::get))).isEqualTo(creators);
  }

  @Test
  void getIfExistsIgnoresConstructorArgumentsOfTheLiveActor() {
    ActorHandle<Counter> first = result(runtime.actor(Counter::new, "gie-1").name("gie").getIfExists().remote());
    ActorHandle<Counter> second = result(runtime.actor(Counter::new, "gie-2").name("gie").getIfExists().remote());
    assertThat(second.actorId()).isEqualTo(first.actorId());
    assertThat(TestActors.constructed("gie-2")).isZero();
  }

  @Test
  void aDeadActorsNameCanBeTakenAgain() {
    ActorHandle<Counter> first = result(runtime.actor(Counter::new, "reuse").name("reuse").remote());
    result(runtime.kill(first, false));
    org.awaitility.Awaitility.await().untilAsserted(() -> {
      ActorHandle<Counter> second = result(runtime.actor(Counter::new, "reuse").name("reuse").remote());
      assertThat(second.actorId()).isNotEqualTo(first.actorId());
    });
  }
}
