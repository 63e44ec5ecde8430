package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.TestActors.Overlap;
import io.kiln.runtime.TestActors.Probe;
import io.kiln.runtime.testing.TestNodes;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Several nodes in one process (in-memory cluster): placement across nodes, affinity, node death. */
@Tag("slow")
class MultiNodeTest {

  LocalCluster cluster;
  KilnRuntime a;
  KilnRuntime b;
  KilnRuntime c;

  @BeforeEach
  void start() {
    cluster = LocalCluster.create();
    a = TestNodes.start(cluster, "a", Resources.cpu(2));
    b = TestNodes.start(cluster, "b", Resources.cpu(2).withGpu(1));
    c = TestNodes.start(cluster, "c", Resources.cpu(2));
    await().until(() -> a.clusterView().aliveNodes().size() == 3);
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  @Test
  void spreadPlacesAcrossNodes() {
    Set<String> nodes = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      ActorHandle<Counter> h = result(a.actor(Counter::new, "spread").strategy(SchedulingStrategy.SPREAD).remote());
      nodes.add(result(h.call(Counter::node)));
    }
    assertThat(nodes).containsExactlyInAnyOrder("a", "b", "c");
  }

  @Test
  void gpuActorGoesToTheNodeWithTheGpu() {
    ActorHandle<Counter> h = result(a.actor(Counter::new, "gpu").resources(Resources.gpu(1)).remote());
    assertThat(h.nodeId()).isEqualTo("b");
  }

  @Test
  void namedLookupWorksFromEveryNode() {
    ActorHandle<Counter> h = result(a.actor(Counter::new, "lookup").name("shared").strategy(SchedulingStrategy.onNode("c"))
        .remote());
    result(h.call(Counter::add, 2));
    for (KilnRuntime rt : new KilnRuntime[] {a, b, c}) {
      ActorHandle<Counter> found = result(rt.getActor("default", "shared", Counter.class));
      assertThat(found.nodeId()).isEqualTo("c");
      assertThat(result(found.call(Counter::get))).isEqualTo(2);
    }
  }

  @Test
  void hardAffinityToADeadNodeIsInfeasibleSoftFallsBack() {
    cluster.crash("c");
    await().until(() -> a.clusterView().aliveNodes().size() == 2);
    Throwable t = failure(a.actor(Counter::new, "hard").strategy(SchedulingStrategy.onNode("c")).remote());
    assertThat(t).isInstanceOf(InfeasibleResourcesException.class).hasMessageContaining("node c is dead");
    ActorHandle<Counter> soft = result(a.actor(Counter::new, "soft")
        .strategy(SchedulingStrategy.nodeAffinity("c", true)).remote());
    assertThat(soft.nodeId()).isIn("a", "b");
  }

  @Test
  void nodeDeathFailsCallersPromptlyAndFreesNames() {
    Probe probe = new Probe(1);
    ActorHandle<Overlap> o = result(a.actor(Overlap::new, probe).name("victim").strategy(SchedulingStrategy.onNode("c"))
        .remote());
    CompletionStage<Integer> inFlight = o.withTimeout(Duration.ofMinutes(5)).call(Overlap::hold);
    await().until(() -> probe.now.get() == 1);

    cluster.crash("c");

    Throwable t = failure(inFlight, Duration.ofSeconds(10));
    assertThat(t).isInstanceOf(ActorDiedException.class).hasMessageContaining("node c");
    assertThat(failure(o.call(Overlap::hold))).isInstanceOf(ActorDiedException.class).hasMessageContaining("node c");
    await().untilAsserted(() -> assertThat(failure(b.getActor("default", "victim", Overlap.class)))
        .isInstanceOf(ActorNotFoundException.class));
    probe.gate.countDown();
  }

  @Test
  void detachedSoftAffinityActorWithRestartsIsRecreatedOnALiveNodeAndHandlesFollow() {
    ActorHandle<Counter> h = result(b.actor(Counter::new, "mover").name("mover").detached().maxRestarts(2)
        .strategy(SchedulingStrategy.nodeAffinity("c", true)).remote());
    assertThat(h.nodeId()).isEqualTo("c");
    result(h.call(Counter::add, 5));

    cluster.crash("c");

    // The same handle reaches the re-created actor (fresh state, one restart counted).
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(result(h.call(Counter::get))).isZero());
    assertThat(h.nodeId()).isIn("a", "b");
    assertThat(result(h.call(Counter::restarts))).isEqualTo(1);
    ActorHandle<Counter> found = result(a.getActor("default", "mover", Counter.class));
    assertThat(found.actorId()).isEqualTo(h.actorId());
  }

  @Test
  void hardAffinityActorsDieWithTheirNodeEvenWithRestartsLeft() {
    ActorHandle<Counter> h = result(b.actor(Counter::new, "pinned").name("pinned").detached().maxRestarts(5)
        .strategy(SchedulingStrategy.onNode("c")).remote());
    cluster.crash("c");
    await().untilAsserted(() -> assertThat(failure(a.getActor("default", "pinned", Counter.class)))
        .isInstanceOf(ActorNotFoundException.class));
    assertThat(failure(h.call(Counter::get))).isInstanceOf(ActorDiedException.class);
  }

  @Test
  void ownedActorsDieWithTheirOwnersNode() {
    ActorHandle<Counter> owned = result(c.actor(Counter::new, "owned-by-c").strategy(SchedulingStrategy.onNode("a"))
        .remote());
    ActorHandle<Counter> detached = result(c.actor(Counter::new, "detached-by-c").strategy(SchedulingStrategy.onNode("a"))
        .detached().remote());
    cluster.crash("c");
    await().untilAsserted(() -> assertThat(failure(owned.call(Counter::get)))
        .isInstanceOf(ActorDiedException.class).hasMessageContaining("owner node c"));
    assertThat(result(detached.call(Counter::add, 1))).isEqualTo(1);
  }

  @Test
  void leaderIsTheOldestAndMovesWhenItDies() {
    assertThat(a.isLeader()).isTrue();
    assertThat(b.isLeader()).isFalse();
    cluster.crash("a");
    await().until(() -> b.isLeader());
  }

  @Test
  void otherNodesSeeResourcesFreedByAnActorsDeathRightAfterItsCreation() {
    // The death's row write falls inside the row interval of the creation's, so it waits on a timer: that timer
    // must not belong to the dying actor's verticle (undeploying it cancelled the write once, for good).
    for (int i = 0; i < 5; i++) {
      ActorHandle<Counter> h = result(a.actor(Counter::new, "short-lived").resources(Resources.cpu(1))
          .strategy(SchedulingStrategy.onNode("c")).remote());
      result(a.kill(h, false));
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(a.clusterView().node("c").orElseThrow()
          .available()).isEqualTo(Resources.cpu(2)));
    }
  }
}
