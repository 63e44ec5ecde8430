package io.kiln.deploy.node;

import static io.kiln.runtime.testing.Await.failure;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.spi.PoolEndpoint;
import io.kiln.gateway.spi.PoolStatus;
import io.kiln.pools.InferenceException;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.impl.LoadReporter;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The node's one port to the pools, both faces over one board fed hand-made reports (on a manual clock): the request
 * path's endpoints route a leaving pool as not ready, the management face reports it as the pool said, ready and
 * draining; both see the same pools.
 */
class PoolsDirectoryTest {

  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private LocalCluster cluster;
  private KilnRuntime runtime;
  private PoolLoadBoard board;
  private PoolsDirectory port;

  @BeforeEach
  void start() {
    cluster = LocalCluster.create();
    runtime = result(cluster.startNode(new NodeOptions("n1", "127.0.0.1", Resources.cpu(1), Map.of())));
    board = new PoolLoadBoard(runtime.vertx(), clock::get, Duration.ofSeconds(2), () -> Set.of("n1", "n2", "n3"));
    result(board.ready());
    port = new PoolsDirectory("n1", board, new PoolClient(runtime));
  }

  @AfterEach
  void stop() {
    board.close();
    cluster.close();
  }

  private void publish(String node, boolean ready, boolean draining, int idle, int busy) {
    runtime.vertx().eventBus().publish(LoadReporter.ADDRESS, new JsonObject().put("deployment", "mlp")
        .put("version", "1").put("node", node).put("manager", "m-" + node).put("seq", 1).put("gone", false)
        .put("ready", ready).put("draining", draining).put("queueDepth", 3).put("inFlight", busy).put("capacity", 10)
        .put("idle", idle).put("busy", busy).put("workers", idle + busy));
  }

  @Test
  void theManagementFaceReportsWhatThePoolsSaidWhereTheRequestPathRoutes() {
    publish("n1", true, true, 2, 1); // leaving with its node: still ready
    publish("n2", false, true, 0, 0); // retired
    publish("n3", true, false, 1, 2);
    await().until(() -> port.status("mlp", "1").size() == 3);

    assertThat(port.status("mlp", "1")).containsExactly(
        new PoolStatus("n1", true, true, 3, 1, 10, 2, 1),
        new PoolStatus("n2", false, true, 3, 0, 10, 0, 0),
        new PoolStatus("n3", true, false, 3, 2, 10, 1, 2));
    assertThat(port.status("mlp", "1")).extracting(PoolStatus::leaving).containsExactly(true, false, false);
    assertThat(port.pools("mlp", "1")).extracting(PoolEndpoint::nodeId, PoolEndpoint::ready, PoolEndpoint::leaving,
            PoolEndpoint::local)
        .containsExactly(
            tuple("n1", false, true, true),
            tuple("n2", false, false, false),
            tuple("n3", true, false, false));
    assertThat(port.status("mlp", "2")).isEmpty();

    clock.addAndGet(Duration.ofMillis(2001).toNanos()); // reports too old: gone from both faces alike
    assertThat(port.status("mlp", "1")).isEmpty();
    assertThat(port.pools("mlp", "1")).isEmpty();
  }

  @Test
  void aModelCallToAPoolThatIsNotThereFailsUnavailableNamingIt() {
    for (Throwable t : new Throwable[] {failure(port.models("mlp", "1", "n2")),
        failure(port.loadModel("mlp", "1", "n2", "a")), failure(port.unloadModel("mlp", "1", "n2", "a"))}) {
      assertThat(t).isInstanceOf(InferenceException.class).hasMessageContaining("mlp");
      assertThat(((InferenceException) t).kind()).isEqualTo(InferenceException.Kind.UNAVAILABLE);
    }
  }
}
