package io.kiln.runtime;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.runtime.TestActors.Counter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Two real Hazelcast members with clustered Vert.x in one JVM: every call between them crosses the
 * clustered event bus through the CBOR codec. (Multi-process behaviour, SIGKILL included, is in the
 * integration tests.)
 */
@Tag("slow")
class ClusteredInProcessTest {

  static KilnRuntime a;
  static KilnRuntime b;

  @BeforeAll
  static void start() {
    String name = "test-" + UUID.randomUUID();
    ClusterOptions head = new ClusterOptions(name, "127.0.0.1", 0, List.of(), Duration.ofSeconds(1),
        Duration.ofSeconds(5), null);
    a = result(KilnCluster.join(new NodeOptions("ca", "127.0.0.1", Resources.cpu(2), Map.of()), head),
        Duration.ofSeconds(60));
    int port = KilnCluster.clusterPort(a);
    ClusterOptions joiner = new ClusterOptions(name, "127.0.0.1", 0, List.of("127.0.0.1:" + port),
        Duration.ofSeconds(1), Duration.ofSeconds(5), null);
    b = result(KilnCluster.join(new NodeOptions("cb", "127.0.0.1", Resources.cpu(2).withGpu(1), Map.of()), joiner),
        Duration.ofSeconds(60));
    await().atMost(Duration.ofSeconds(60)).until(() -> a.clusterView().aliveNodes().size() == 2
        && b.clusterView().aliveNodes().size() == 2);
  }

  @AfterAll
  static void stop() {
    if (b != null) {
      b.close();
    }
    if (a != null) {
      a.close();
    }
  }

  @Test
  void aClusteredNodeRunsOneEventLoopPerCore() {
    assertThat(EventLoopsTest.eventLoops(a.vertx())).isEqualTo(Runtime.getRuntime().availableProcessors());
  }

  @Test
  void remoteCreateAndCallThroughTheCodec() {
    ActorHandle<Counter> c = result(a.actor(Counter::new, "remote-1").name("remote").resources(Resources.gpu(1)).remote());
    assertThat(c.nodeId()).isEqualTo("cb");
    assertThat(result(c.call(Counter::add, 40))).isEqualTo(40);
    assertThat(result(c.call(Counter::echo, "über"))).isEqualTo("über");
    assertThat(result(c.call(Counter::gpus))).containsExactly(0);
    Throwable t = failure(c.call(Counter::failWith, "no"));
    assertThat(t).isInstanceOf(IllegalArgumentException.class).hasMessage("no");
    ActorHandle<Counter> fromB = result(b.getActor("default", "remote", Counter.class));
    assertThat(result(fromB.call(Counter::get))).isEqualTo(40);
    result(a.kill(c, false));
    assertThat(failure(c.call(Counter::get))).isInstanceOf(ActorDiedException.class);
  }

  @Test
  void remoteTasksRunWhereTheResourcesAre() {
    String where = result(a.task(ClusteredInProcessTest::whereAmI).resources(Resources.gpu(1)).remote());
    assertThat(where).isEqualTo("ran");
  }

  static String whereAmI() {
    return "ran";
  }

  @Test
  void placementGroupsAcrossMembersThroughTheCodec() {
    PlacementGroup pg = result(a.placementGroup(PlacementGroupOptions.builder()
        .strategy(PlacementGroupStrategy.STRICT_SPREAD).bundle(Resources.cpu(1)).bundle(Resources.cpu(1).withGpu(1))
        .name("across").build()));
    result(pg.ready(), Duration.ofSeconds(30));
    assertThat(result(pg.info()).bundleNodes()).containsExactly("ca", "cb");
    PlacementGroup fromB = result(b.getPlacementGroup("default", "across"));
    ActorHandle<Counter> gpu = result(a.actor(Counter::new, "pg-gpu").resources(Resources.gpu(1))
        .strategy(fromB.bundle(1)).remote());
    assertThat(gpu.nodeId()).isEqualTo("cb");
    assertThat(result(gpu.call(Counter::gpus))).containsExactly(0);
    assertThat(result(b.task(ClusteredInProcessTest::whereAmI).resources(Resources.cpu(1)).strategy(pg.bundle(0))
        .remote())).isEqualTo("ran");
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(a.clusterView().node("cb").orElseThrow()
        .available()).isEqualTo(Resources.cpu(1).withGpu(0)));
    result(b.placementGroups().thenCompose(all -> fromB.remove()));
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(failure(gpu.call(Counter::get)))
        .isInstanceOf(ActorDiedException.class));
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(a.clusterView().node("cb").orElseThrow()
        .available()).isEqualTo(Resources.cpu(2).withGpu(1)));
  }
}
