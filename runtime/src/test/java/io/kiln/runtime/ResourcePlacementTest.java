package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.testing.TestNodes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ResourcePlacementTest {

  KilnRuntime runtime;

  @BeforeEach
  void start() {
    runtime = TestNodes.single("res", Resources.cpu(2).withGpu(4).with("step_a_slot", 2));
  }

  @AfterEach
  void stop() {
    runtime.close();
  }

  @Test
  void wholeGpusGetDistinctDeviceIndices() {
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      ActorHandle<Counter> c = result(runtime.actor(Counter::new, "gpu").resources(Resources.gpu(1)).remote());
      List<Integer> gpus = result(c.call(Counter::gpus));
      assertThat(gpus).hasSize(1);
      seen.addAll(gpus);
    }
    assertThat(seen).containsExactlyInAnyOrder(0, 1, 2, 3);
    assertThat(runtime.localNode().available().get(Resources.GPU)).isZero();
  }

  @Test
  void fractionalGpusPackOntoOneDevice() {
    ActorHandle<Counter> a = result(runtime.actor(Counter::new, "frac").resources(Resources.gpu(0.5)).remote());
    ActorHandle<Counter> b = result(runtime.actor(Counter::new, "frac").resources(Resources.gpu(0.5)).remote());
    assertThat(result(a.call(Counter::gpus))).isEqualTo(result(b.call(Counter::gpus))).hasSize(1);
  }

  @Test
  void infeasibleRequestFailsAtOnceWithTheNumbers() {
    Throwable t = failure(runtime.actor(Counter::new, "inf").resources(Resources.gpu(8)).remote(), Duration.ofSeconds(5));
    assertThat(t).isInstanceOf(InfeasibleResourcesException.class).hasMessageContaining("GPU: 8").hasMessageContaining("GPU: 4");
    Throwable custom = failure(runtime.actor(Counter::new, "inf").resources(Resources.of("step_d_slot", 1)).remote());
    assertThat(custom).isInstanceOf(InfeasibleResourcesException.class).hasMessageContaining("step_d_slot");
  }

  @Test
  void feasibleRequestWaitsForResourcesAndIsPlacedWhenTheyFree() {
    ActorHandle<Counter> holder = result(runtime.actor(Counter::new, "hold").resources(Resources.cpu(2)).remote());
    CompletionStage<ActorHandle<Counter>> waiting = runtime.actor(Counter::new, "wait").resources(Resources.cpu(2)).remote();
    assertThat(waiting.toCompletableFuture()).isNotDone();
    result(runtime.kill(holder, false));
    ActorHandle<Counter> placed = result(waiting);
    assertThat(result(placed.call(Counter::add, 1))).isEqualTo(1);
  }

  @Test
  void waitersAreServedFirstInFirstOut() {
    ActorHandle<Counter> holder = result(runtime.actor(Counter::new, "fifo").resources(Resources.cpu(2)).remote());
    List<CompletionStage<ActorHandle<Counter>>> waiting = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      waiting.add(runtime.actor(Counter::new, "fifo-" + i).resources(Resources.cpu(2)).remote());
    }
    result(runtime.kill(holder, false));
    ActorHandle<Counter> first = result(waiting.get(0));
    assertThat(waiting.get(1).toCompletableFuture()).isNotDone();
    assertThat(waiting.get(2).toCompletableFuture()).isNotDone();
    result(runtime.kill(first, false));
    ActorHandle<Counter> second = result(waiting.get(1));
    assertThat(waiting.get(2).toCompletableFuture()).isNotDone();
    result(runtime.kill(second, false));
    result(waiting.get(2));
  }

  @Test
  void pendingRequestTimesOut() {
    result(runtime.actor(Counter::new, "t").resources(Resources.cpu(2)).remote());
    Throwable t = failure(runtime.actor(Counter::new, "t2").resources(Resources.cpu(1))
        .with(b -> b.placementTimeout(Duration.ofMillis(300))).remote());
    assertThat(t).isInstanceOf(PlacementTimeoutException.class).hasMessageContaining("CPU: 1");
  }

  @Test
  void customResourcesActAsSlots() {
    result(runtime.actor(Counter::new, "slot").resources(Resources.of("step_a_slot", 1)).remote());
    result(runtime.actor(Counter::new, "slot").resources(Resources.of("step_a_slot", 1)).remote());
    CompletionStage<ActorHandle<Counter>> third = runtime.actor(Counter::new, "slot")
        .resources(Resources.of("step_a_slot", 1)).with(b -> b.placementTimeout(Duration.ofMillis(300))).remote();
    assertThat(failure(third)).isInstanceOf(PlacementTimeoutException.class);
  }

  @Test
  void resourcesReturnWhenAnActorDies() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "ret").resources(Resources.cpu(1).withGpu(1)).remote());
    assertThat(runtime.localNode().available()).isEqualTo(Resources.cpu(1).withGpu(3).with("step_a_slot", 2));
    result(runtime.kill(c, false));
    org.awaitility.Awaitility.await().untilAsserted(() -> assertThat(runtime.localNode().available())
        .isEqualTo(Resources.cpu(2).withGpu(4).with("step_a_slot", 2)));
  }

  @Test
  void zeroResourceActorWithHardAffinityToThisNode() {
    ActorHandle<Counter> c = result(runtime.actor(Counter::new, "aff").strategy(SchedulingStrategy.onNode("res")).remote());
    assertThat(c.nodeId()).isEqualTo("res");
    Throwable t = failure(runtime.actor(Counter::new, "aff").strategy(SchedulingStrategy.onNode("nope")).remote());
    assertThat(t).isInstanceOf(InfeasibleResourcesException.class).hasMessageContaining("nope");
  }
}
