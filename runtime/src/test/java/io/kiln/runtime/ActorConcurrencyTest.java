package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TestActors.Overlap;
import io.kiln.runtime.TestActors.Probe;
import io.kiln.runtime.testing.TestNodes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("slow")
class ActorConcurrencyTest {

  static KilnRuntime runtime;

  @BeforeAll
  static void start() {
    runtime = TestNodes.single("concurrency", Resources.cpu(4));
  }

  @AfterAll
  static void stop() {
    runtime.close();
  }

  @Test
  void maxConcurrencyOneIsStrictlySerial() {
    Probe probe = new Probe(1);
    ActorHandle<Overlap> o = result(runtime.actor(Overlap::new, probe).remote());
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      calls.add(o.call(Overlap::hold));
    }
    await().until(() -> probe.now.get() == 1);
    probe.gate.countDown();
    calls.forEach(c -> assertThat(result(c)).isEqualTo(1));
    assertThat(probe.max.get()).isEqualTo(1);
  }

  @Test
  void workerActorRunsUpToMaxConcurrencyCallsAtOnce() {
    Probe probe = new Probe(1);
    ActorHandle<Overlap> o = result(runtime.actor(Overlap::new, probe).maxConcurrency(3).remote());
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      calls.add(o.call(Overlap::hold));
    }
    await().until(() -> probe.now.get() == 3); // three threads busy; six calls wait in the mailbox
    assertThat(calls).noneMatch(c -> c.toCompletableFuture().isDone());
    probe.gate.countDown();
    calls.forEach(c -> assertThat(result(c)).isEqualTo(1));
    assertThat(probe.max.get()).isEqualTo(3);
  }

  @Test
  void asyncMethodsInterleaveUpToMaxConcurrency() {
    Probe probe = new Probe(0);
    ActorHandle<Overlap> o = result(runtime.actor(Overlap::new, probe)
        .mode(ExecutionMode.EVENT_LOOP).maxConcurrency(4).remote());
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      calls.add(o.callAsync(Overlap::holdAsync));
    }
    await().until(() -> probe.now.get() == 4);
    assertThat(probe.pendingAsync).hasSize(4);
    await().until(() -> {
      probe.releaseAsync();
      return calls.stream().allMatch(c -> c.toCompletableFuture().isDone());
    });
    calls.forEach(c -> assertThat(result(c)).isEqualTo(1));
    assertThat(probe.max.get()).isEqualTo(4);
    assertThat(probe.pendingAsync).hasSize(10);
  }

  @Test
  void asyncMethodsOnASerialActorDoNotInterleave() {
    Probe probe = new Probe(0);
    ActorHandle<Overlap> o = result(runtime.actor(Overlap::new, probe).remote());
    List<CompletionStage<Integer>> calls = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      calls.add(o.callAsync(Overlap::holdAsync));
    }
    await().until(() -> {
      probe.releaseAsync();
      return calls.stream().allMatch(c -> c.toCompletableFuture().isDone());
    });
    assertThat(probe.max.get()).isEqualTo(1);
  }
}
