package io.kiln.runtime.cluster;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorNotFoundException;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.InfeasibleResourcesException;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.NodeUnreachableException;
import io.kiln.runtime.PlacementGroup;
import io.kiln.runtime.PlacementGroupInfo;
import io.kiln.runtime.PlacementGroupOptions;
import io.kiln.runtime.PlacementGroupState;
import io.kiln.runtime.PlacementGroupStrategy;
import io.kiln.runtime.Resources;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.cluster.Prober.Counter;
import io.kiln.runtime.cluster.Prober.Sleeper;
import io.kiln.runtime.testing.NodeMain;
import io.kiln.runtime.testing.NodeProcesses;
import io.kiln.testkit.KilnProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Three node processes on 127.0.0.1 plus this JVM as a driver node (no resources): remote creation and
 * calls, lookups from every node, a cross-node get-or-create race, lifetimes across a creator's exit,
 * placement groups (STRICT_SPREAD over the three nodes; a bundle rescheduled after SIGKILL), and SIGKILL of a
 * node (its calls in flight fail at once as unreachable, later ones as dead). Ordered: the later tests take nodes
 * away.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterIT {

  static final Duration JOIN = Duration.ofSeconds(120);
  static NodeProcesses nodes;
  static KilnRuntime driver;

  @BeforeAll
  static void startCluster() throws Exception {
    String name = "it-" + UUID.randomUUID();
    nodes = new NodeProcesses(Path.of("target", "node-logs", "ClusterIT"));
    int headPort = NodeProcesses.await(nodes.start(NodeMain.class.getName(), "n1", "--cluster", name,
        "--resources", "CPU=2"), JOIN);
    String join = "127.0.0.1:" + headPort;
    KilnProcess n2 = nodes.start(NodeMain.class.getName(), "n2", "--cluster", name, "--join", join,
        "--resources", "CPU=2");
    KilnProcess n3 = nodes.start(NodeMain.class.getName(), "n3", "--cluster", name, "--join", join,
        "--resources", "CPU=2,GPU=1");
    NodeProcesses.await(n2, JOIN);
    NodeProcesses.await(n3, JOIN);
    driver = result(KilnCluster.join(new NodeOptions("driver", "127.0.0.1", Resources.NONE, Map.of()),
        new ClusterOptions(name, "127.0.0.1", 0, List.of(join), Duration.ofSeconds(1), Duration.ofSeconds(4), null)), JOIN);
    await().atMost(Duration.ofSeconds(60)).until(() -> driver.clusterView().aliveNodes().size() == 4);
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (driver != null) {
      driver.close();
    }
    if (nodes != null) {
      nodes.close();
    }
  }

  private static ActorHandle<Prober> prober(String node) {
    return result(driver.actor(Prober::new).name("prober-" + node).getIfExists()
        .strategy(SchedulingStrategy.onNode(node)).remote());
  }

  @Test
  @Order(1)
  void remoteCreateAndCallOnEveryNode() {
    for (String n : List.of("n1", "n2", "n3")) {
      ActorHandle<Counter> c = result(driver.actor(Counter::new).strategy(SchedulingStrategy.onNode(n)).remote());
      assertThat(result(c.call(Counter::add, 3))).isEqualTo(3);
      assertThat(result(c.call(Counter::node))).isEqualTo(n);
    }
    ActorHandle<Counter> gpu = result(driver.actor(Counter::new).resources(Resources.gpu(1)).remote());
    assertThat(gpu.nodeId()).isEqualTo("n3");
    result(driver.kill(gpu, false));
  }

  @Test
  @Order(2)
  void namedLookupFromEveryNode() {
    ActorHandle<Counter> shared = result(driver.actor(Counter::new).name("shared").detached()
        .strategy(SchedulingStrategy.onNode("n2")).remote());
    result(shared.call(Counter::add, 11));
    for (String n : List.of("n1", "n2", "n3")) {
      assertThat(result(prober(n).call(Prober::lookupAndGet, "default", "shared"))).isEqualTo("n2:11");
    }
  }

  @Test
  @Order(3)
  void crossNodeGetOrCreateRaceYieldsOneActor() {
    List<CompletionStage<List<String>>> races = List.of("n1", "n2", "n3").stream()
        .map(n -> prober(n).call(Prober::race, "race", 12)).toList();
    Set<String> ids = new HashSet<>();
    races.forEach(r -> ids.addAll(result(r)));
    assertThat(ids).hasSize(1);
    int alive = 0;
    for (String n : List.of("n1", "n2", "n3")) {
      alive += result(prober(n).call(Prober::localAlive, "race"));
    }
    assertThat(alive).isEqualTo(1);
  }

  @Test
  @Order(4)
  void hardAffinityToAnUnknownNodeFailsSoftFallsBack() {
    assertThat(failure(driver.actor(Counter::new).strategy(SchedulingStrategy.onNode("nope")).remote()))
        .isInstanceOf(InfeasibleResourcesException.class);
    ActorHandle<Counter> soft = result(driver.actor(Counter::new).strategy(SchedulingStrategy.nodeAffinity("nope", true))
        .remote());
    assertThat(soft.nodeId()).isNotEqualTo("nope");
  }

  @Test
  @Order(5)
  void strictSpreadGroupTakesABundleOnEachNodeAndRemovalFreesThem() {
    PlacementGroup pg = result(driver.placementGroup(PlacementGroupOptions.builder()
        .strategy(PlacementGroupStrategy.STRICT_SPREAD).bundle(Resources.cpu(1)).bundle(Resources.cpu(1))
        .bundle(Resources.cpu(1)).build()));
    result(pg.ready(), JOIN);
    List<String> nodesOfBundles = result(pg.info()).bundleNodes();
    assertThat(new HashSet<>(nodesOfBundles)).containsExactlyInAnyOrder("n1", "n2", "n3");
    List<ActorHandle<Counter>> inside = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ActorHandle<Counter> h = result(driver.actor(Counter::new).resources(Resources.cpu(1)).strategy(pg.bundle(i))
          .remote());
      assertThat(result(h.call(Counter::node))).isEqualTo(nodesOfBundles.get(i));
      inside.add(h);
    }
    for (String n : List.of("n1", "n2", "n3")) {
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(driver.clusterView().node(n).orElseThrow()
          .available().get(Resources.CPU)).as(() -> n + ": the node itself says "
          + result(prober(n).call(Prober::localAvailable)) + ", n1 sees " + result(prober("n1").call(Prober::availableOf, n))
          + ", n2 sees " + result(prober("n2").call(Prober::availableOf, n))).isEqualTo(1.0));
    }
    result(pg.remove());
    for (ActorHandle<Counter> h : inside) {
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(failure(h.call(Counter::get)))
          .isInstanceOf(ActorDiedException.class));
    }
    for (String n : List.of("n1", "n2", "n3")) {
      await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(driver.clusterView().node(n).orElseThrow()
          .available().get(Resources.CPU)).as(n).isEqualTo(2.0));
    }
  }

  @Test
  @Order(6)
  void detachedActorsSurviveTheirCreatorsExitOwnedOnesDoNot() throws Exception {
    ActorHandle<Prober> onN1 = prober("n1");
    result(onN1.call(Prober::spawn, "owned-by-n1", "n2", false));
    result(onN1.call(Prober::spawn, "detached-by-n1", "n2", true));
    ActorHandle<Counter> owned = result(driver.getActor("default", "owned-by-n1", Counter.class));
    ActorHandle<Counter> detached = result(driver.getActor("default", "detached-by-n1", Counter.class));

    nodes.stop("n1"); // the creator's process exits (it was also the leader)

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(failure(owned.call(Counter::get)))
        .isInstanceOf(ActorDiedException.class));
    assertThat(result(detached.call(Counter::add, 1))).isEqualTo(1);
  }

  static PlacementGroup spreadGroup;
  static ActorHandle<Counter> inGroup;

  @Test
  @Order(7)
  void spreadGroupWithAnActorInItsBundleOnN3() {
    spreadGroup = result(driver.placementGroup(PlacementGroupOptions.builder().strategy(PlacementGroupStrategy.SPREAD)
        .bundle(Resources.cpu(0.5)).bundle(Resources.cpu(0.5)).detached().build()));
    result(spreadGroup.ready(), JOIN);
    List<String> nodesOfBundles = result(spreadGroup.info()).bundleNodes();
    assertThat(nodesOfBundles).containsExactlyInAnyOrder("n2", "n3");
    inGroup = result(driver.actor(Counter::new).name("in-group").detached().maxRestarts(3)
        .resources(Resources.cpu(0.5)).strategy(spreadGroup.bundle(nodesOfBundles.indexOf("n3"))).remote());
    assertThat(result(inGroup.call(Counter::node))).isEqualTo("n3");
  }

  @Test
  @Order(8)
  void sigkillOfANodeHealsTheRegistryAndFailsCallersFast() throws Exception {
    ActorHandle<Sleeper> sleeper = result(driver.actor(Sleeper::new).strategy(SchedulingStrategy.onNode("n3")).remote());
    ActorHandle<Counter> pinned = result(driver.actor(Counter::new).name("pinned").detached().maxRestarts(3)
        .strategy(SchedulingStrategy.onNode("n3")).remote());
    ActorHandle<Counter> mover = result(driver.actor(Counter::new).name("mover").detached().maxRestarts(3)
        .strategy(SchedulingStrategy.nodeAffinity("n3", true)).remote());
    result(mover.call(Counter::add, 7));
    CompletionStage<String> inFlight = sleeper.withTimeout(Duration.ofMinutes(5)).call(Sleeper::sleep, 120_000L);

    long killed = System.nanoTime();
    nodes.kill("n3");

    // The kernel closes the dead process's sockets at once: the call in flight fails on the event-bus connection's
    // close, long before membership drops the node (4 s here).
    Throwable t = failure(inFlight, Duration.ofSeconds(30));
    long failedAfterMs = (System.nanoTime() - killed) / 1_000_000;
    assertThat(t).isInstanceOf(NodeUnreachableException.class).hasMessageContaining("n3");
    assertThat(((NodeUnreachableException) t).nodeId()).isEqualTo("n3");
    assertThat(failedAfterMs).isLessThan(10_000);

    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(failure(driver.getActor("default",
        "pinned", Counter.class))).isInstanceOf(ActorNotFoundException.class));
    // Until this node's own membership drops n3 its calls fail as unreachable; from then on, as dead.
    await().atMost(Duration.ofSeconds(20)).until(() -> !driver.members().contains("n3"));
    assertThat(failure(pinned.call(Counter::get))).isInstanceOf(ActorDiedException.class);

    // The soft-affinity, detached actor with restarts left was re-created on a live node.
    // Re-creation waits for the leader to see the member gone and to schedule anew: generous on a loaded machine.
    await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertThat(result(mover.call(Counter::restarts)))
        .isEqualTo(1));
    assertThat(mover.nodeId()).isNotEqualTo("n3");
    assertThat(result(mover.call(Counter::get))).isZero();
    System.out.printf("ClusterIT: in-flight call failed %d ms after SIGKILL%n", failedAfterMs);
  }

  @Test
  @Order(9)
  void theGroupsBundleOnTheKilledNodeIsRescheduledAndItsActorRestartedThere() {
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
      PlacementGroupInfo info = result(spreadGroup.info());
      assertThat(info.state()).isEqualTo(PlacementGroupState.CREATED);
      assertThat(info.bundleNodes()).containsOnly("n2");
    });
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(result(inGroup.call(Counter::restarts)))
        .isEqualTo(1));
    assertThat(result(inGroup.call(Counter::node))).isEqualTo("n2");
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(driver.clusterView().node("n2")
        .orElseThrow().available().get(Resources.CPU)).isEqualTo(1.0));
  }
}
