package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TestActors.Counter;
import io.kiln.runtime.testing.TestNodes;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Placement groups on three in-process nodes (in-memory cluster): creation all or nothing, actors and tasks
 * in bundles paying from the bundle, removal killing and freeing, node death rescheduling.
 */
@Tag("slow")
class PlacementGroupTest {

  static final Duration LONG = Duration.ofSeconds(60);

  LocalCluster cluster;
  KilnRuntime a;
  KilnRuntime b;
  KilnRuntime c;

  @BeforeEach
  void start() {
    cluster = LocalCluster.create();
    a = TestNodes.start(cluster, "a", Resources.cpu(4));
    b = TestNodes.start(cluster, "b", Resources.cpu(4).withGpu(2));
    c = TestNodes.start(cluster, "c", Resources.cpu(4));
    await().until(() -> a.clusterView().aliveNodes().size() == 3);
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private static PlacementGroupOptions.Builder group(PlacementGroupStrategy strategy, int n, Resources each) {
    PlacementGroupOptions.Builder o = PlacementGroupOptions.builder().strategy(strategy);
    for (int i = 0; i < n; i++) {
      o.bundle(each);
    }
    return o;
  }

  private double availableCpu(KilnRuntime from, String node) {
    return from.clusterView().node(node).orElseThrow().available().get(Resources.CPU);
  }

  @Test
  void strictSpreadReservesABundlePerNodeAndActorsInsidePayFromTheBundle() {
    PlacementGroup pg = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_SPREAD, 3, Resources.cpu(2)).build()));
    result(pg.ready(), LONG);
    PlacementGroupInfo info = result(pg.info());
    assertThat(info.state()).isEqualTo(PlacementGroupState.CREATED);
    assertThat(new HashSet<>(info.bundleNodes())).containsExactlyInAnyOrder("a", "b", "c");
    for (String n : List.of("a", "b", "c")) {
      await().until(() -> availableCpu(b, n) == 2.0);
    }

    for (int i = 0; i < 3; i++) {
      ActorHandle<Counter> h = result(a.actor(Counter::new, "in-bundle").resources(Resources.cpu(2))
          .strategy(pg.bundle(i)).remote());
      assertThat(h.nodeId()).isEqualTo(info.bundleNodes().get(i));
      assertThat(result(h.call(Counter::node))).isEqualTo(info.bundleNodes().get(i));
    }
    // The actors paid from their bundles, not from the nodes' free pools.
    for (String n : List.of("a", "b", "c")) {
      assertThat(availableCpu(a, n)).isEqualTo(2.0);
    }
    // A full bundle makes the next request wait (here: until its placement timeout) ...
    Throwable full = failure(a.actor(Counter::new, "full").resources(Resources.cpu(1)).strategy(pg.bundle(0))
        .with(o -> o.placementTimeout(Duration.ofMillis(300))).remote());
    assertThat(full).isInstanceOf(PlacementTimeoutException.class).hasMessageContaining("bundle 0");
    // ... and one larger than the bundle fails at once, naming it.
    Throwable tooBig = failure(a.actor(Counter::new, "big").resources(Resources.cpu(3)).strategy(pg.bundle(1)).remote());
    assertThat(tooBig).isInstanceOf(InfeasibleResourcesException.class)
        .hasMessageContaining("bundle 1 of placement group").hasMessageContaining("reserves {CPU: 2}");
  }

  @Test
  void removalKillsWhatRunsInTheBundlesAndFreesTheirResources() {
    PlacementGroup pg = result(a.placementGroup(group(PlacementGroupStrategy.PACK, 2, Resources.cpu(1).withGpu(1))
        .name("gang").build()));
    result(pg.ready(), LONG);
    assertThat(result(pg.info()).bundleNodes()).containsOnly("b");
    ActorHandle<Counter> inside = result(c.actor(Counter::new, "doomed").resources(Resources.gpu(1))
        .strategy(pg.bundle(1)).remote());
    assertThat(result(inside.call(Counter::gpus))).hasSize(1);
    String task = result(c.task(PlacementGroupTest::hello).resources(Resources.cpu(1)).strategy(pg.bundle(-1)).remote());
    assertThat(task).isEqualTo("hello");
    await().until(() -> b.clusterView().node("b").orElseThrow().available().equals(Resources.cpu(2)));

    result(c.getPlacementGroup("default", "gang").thenCompose(PlacementGroup::remove));

    await().atMost(LONG).untilAsserted(() -> assertThat(failure(inside.call(Counter::get)))
        .isInstanceOf(ActorDiedException.class).hasMessageContaining("placement group"));
    await().until(() -> a.clusterView().node("b").orElseThrow().available().equals(Resources.cpu(4).withGpu(2)));
    assertThat(failure(pg.info())).isInstanceOf(PlacementGroupNotFoundException.class);
    assertThat(failure(a.getPlacementGroup("default", "gang"))).isInstanceOf(PlacementGroupNotFoundException.class);
    assertThat(failure(a.actor(Counter::new, "late").strategy(pg.bundle(0)).remote()))
        .isInstanceOf(InfeasibleResourcesException.class);
    assertThat(failure(pg.ready())).isInstanceOf(PlacementGroupException.class);
    // The name is free again.
    result(a.placementGroup(group(PlacementGroupStrategy.PACK, 1, Resources.cpu(1)).name("gang").build()));
  }

  static String hello() {
    return "hello";
  }

  static final java.util.concurrent.CountDownLatch TASK_GATE = new java.util.concurrent.CountDownLatch(1);
  static final java.util.concurrent.atomic.AtomicInteger TASKS_STARTED = new java.util.concurrent.atomic.AtomicInteger();

  static String blockUntilReleased() throws InterruptedException {
    TASKS_STARTED.incrementAndGet();
    TASK_GATE.await(60, java.util.concurrent.TimeUnit.SECONDS);
    return "released";
  }

  @Test
  void removalFailsTheTasksRunningInTheBundles() {
    PlacementGroup pg = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_PACK, 1, Resources.cpu(2)).build()));
    result(pg.ready(), LONG);
    java.util.concurrent.CompletionStage<String> running = b.task(PlacementGroupTest::blockUntilReleased)
        .resources(Resources.cpu(1)).strategy(pg.bundle(0)).maxRetries(0).remote();
    await().atMost(LONG).until(() -> TASKS_STARTED.get() == 1);
    result(pg.remove());
    try {
      assertThat(failure(running)).isInstanceOf(KilnException.class).hasMessageContaining("cancelled")
          .hasMessageContaining("bundle was freed");
    } finally {
      TASK_GATE.countDown();
    }
    for (String n : List.of("a", "b", "c")) {
      await().until(() -> availableCpu(c, n) == 4.0);
    }
  }

  @Test
  void strictPackPutsTheGangOnOneNodeAndNamesAreUnique() {
    PlacementGroup pg = result(b.placementGroup(group(PlacementGroupStrategy.STRICT_PACK, 3, Resources.cpu(1))
        .name("pack").detached().build()));
    result(pg.ready(), LONG);
    assertThat(new HashSet<>(result(pg.info()).bundleNodes())).hasSize(1);
    PlacementGroup found = result(c.getPlacementGroup("default", "pack"));
    assertThat(found.id()).isEqualTo(pg.id());
    assertThat(found.options().strategy()).isEqualTo(PlacementGroupStrategy.STRICT_PACK);
    assertThat(failure(a.placementGroup(group(PlacementGroupStrategy.PACK, 1, Resources.cpu(1)).name("pack").build())))
        .isInstanceOf(PlacementGroupException.class).hasMessageContaining("taken");
    assertThat(result(a.placementGroups())).extracting(PlacementGroupInfo::groupId).contains(pg.id());
  }

  @Test
  void aGroupThatDoesNotFitWaitsWithoutHoldingAnythingAndIsCreatedOnceResourcesFree() {
    ActorHandle<Counter> hog = result(a.actor(Counter::new, "hog").resources(Resources.cpu(2))
        .strategy(SchedulingStrategy.onNode("c")).remote());
    PlacementGroup pg = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_SPREAD, 3, Resources.cpu(3)).build()));
    await().atMost(LONG).untilAsserted(() -> assertThat(result(pg.info()).reason()).isNotNull());
    assertThat(result(pg.info()).state()).isEqualTo(PlacementGroupState.PENDING);
    // All or nothing: a and b, which could each hold a bundle, hold none.
    assertThat(availableCpu(a, "a")).isEqualTo(4.0);
    assertThat(availableCpu(a, "b")).isEqualTo(4.0);

    result(a.kill(hog, false));

    result(pg.ready(), LONG);
    assertThat(new HashSet<>(result(pg.info()).bundleNodes())).containsExactlyInAnyOrder("a", "b", "c");
  }

  @Test
  void anInfeasibleGroupStaysPendingAndFailsAfterItsTimeout() {
    PlacementGroup waiting = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_SPREAD, 4, Resources.cpu(1))
        .build()));
    await().atMost(LONG).untilAsserted(() -> assertThat(result(waiting.info()).reason())
        .contains("STRICT_SPREAD needs 4 distinct nodes"));
    PlacementGroup timed = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_PACK, 2, Resources.cpu(3))
        .timeout(Duration.ofMillis(500)).build()));
    Throwable t = failure(timed.ready(), LONG);
    assertThat(t).isInstanceOf(PlacementGroupException.class).hasMessageContaining("FAILED")
        .hasMessageContaining("STRICT_PACK needs {CPU: 6}");
    assertThat(result(timed.info()).state()).isEqualTo(PlacementGroupState.FAILED);
    assertThat(result(waiting.info()).state()).isEqualTo(PlacementGroupState.PENDING);
  }

  @Test
  void nodeDeathReschedulesTheLostBundleAndRestartsItsActorThere() {
    PlacementGroup pg = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_SPREAD, 2, Resources.cpu(1))
        .detached().build()));
    result(pg.ready(), LONG);
    List<String> before = result(pg.info()).bundleNodes();
    int lostIndex = before.get(0).equals("a") ? 1 : 0; // crash a node that is not the leader
    String lost = before.get(lostIndex);
    ActorHandle<Counter> actor = result(a.actor(Counter::new, "mover").name("mover").detached().maxRestarts(2)
        .resources(Resources.cpu(1)).strategy(pg.bundle(lostIndex)).remote());
    assertThat(actor.nodeId()).isEqualTo(lost);
    result(actor.call(Counter::add, 5));

    cluster.crash(lost);

    await().atMost(LONG).untilAsserted(() -> {
      PlacementGroupInfo info = result(pg.info());
      assertThat(info.state()).isEqualTo(PlacementGroupState.CREATED);
      assertThat(info.bundleNodes()).doesNotContain(lost).doesNotHaveDuplicates();
      assertThat(info.bundleNodes().get(1 - lostIndex)).isEqualTo(before.get(1 - lostIndex));
    });
    String moved = result(pg.info()).bundleNodes().get(lostIndex);
    await().atMost(LONG).untilAsserted(() -> assertThat(result(actor.call(Counter::restarts))).isEqualTo(1));
    assertThat(result(actor.call(Counter::node))).isEqualTo(moved);
    assertThat(result(actor.call(Counter::get))).isZero();
  }

  @Test
  void aStrictPackGroupMovesWholeWhenItsNodeDies() {
    PlacementGroup pg = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_PACK, 2, Resources.cpu(1))
        .detached().build()));
    result(pg.ready(), LONG);
    String node = result(pg.info()).bundleNodes().get(0);
    if (node.equals("a")) { // keep the leader: make the group land elsewhere first
      result(pg.remove());
      result(a.actor(Counter::new, "fill").resources(Resources.cpu(3)).strategy(SchedulingStrategy.onNode("a")).remote());
      pg = result(a.placementGroup(group(PlacementGroupStrategy.STRICT_PACK, 2, Resources.cpu(1)).detached().build()));
      result(pg.ready(), LONG);
      node = result(pg.info()).bundleNodes().get(0);
    }
    String dead = node;
    PlacementGroup group = pg;
    cluster.crash(dead);
    await().atMost(LONG).untilAsserted(() -> {
      PlacementGroupInfo info = result(group.info());
      assertThat(info.state()).isEqualTo(PlacementGroupState.CREATED);
      assertThat(new HashSet<>(info.bundleNodes())).hasSize(1).doesNotContain(dead);
    });
  }

  @Test
  void anOwnedGroupGoesWithItsCreatorNode() {
    PlacementGroup owned = result(c.placementGroup(group(PlacementGroupStrategy.PACK, 1, Resources.cpu(1)).build()));
    PlacementGroup detached = result(c.placementGroup(group(PlacementGroupStrategy.PACK, 1, Resources.cpu(1))
        .detached().build()));
    result(owned.ready(), LONG);
    result(detached.ready(), LONG);
    cluster.crash("c");
    await().atMost(LONG).untilAsserted(() -> assertThat(failure(a.placementGroups()
        .thenCompose(x -> owned.info()))).isInstanceOf(PlacementGroupNotFoundException.class));
    await().atMost(LONG).untilAsserted(() -> assertThat(result(detached.info()).state())
        .isEqualTo(PlacementGroupState.CREATED));
  }
}
