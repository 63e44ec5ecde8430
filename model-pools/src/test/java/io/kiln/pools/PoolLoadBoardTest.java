package io.kiln.pools;

import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.impl.LoadReporter;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The board alone, fed hand-made reports on a bare event bus, on a manual clock. */
class PoolLoadBoardTest {

  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final Set<String> alive = ConcurrentHashMap.newKeySet();
  private Vertx vertx;
  private PoolLoadBoard board;

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
    alive.addAll(Set.of("n1", "n2"));
    board = new PoolLoadBoard(vertx, clock::get, Duration.ofSeconds(2), () -> Set.copyOf(alive));
    result(board.ready());
  }

  @AfterEach
  void stop() {
    board.close();
    result(vertx.close().toCompletionStage());
  }

  private static JsonObject report(String node, String manager, long seq, int queueDepth) {
    return new JsonObject().put("deployment", "mlp").put("version", "1").put("node", node).put("manager", manager)
        .put("seq", seq).put("gone", false).put("ready", true).put("draining", false).put("queueDepth", queueDepth)
        .put("inFlight", 1).put("capacity", 10).put("idle", 0).put("busy", 1).put("workers", 1);
  }

  private void publish(JsonObject report) {
    vertx.eventBus().publish(LoadReporter.ADDRESS, report);
  }

  @Test
  void keepsTheLatestReportPerNodeAndDropsOnesOlderThanTheMaximumAge() {
    publish(report("n1", "m1", 1, 3));
    publish(report("n1", "m1", 2, 5));
    publish(report("n2", "m2", 1, 0));
    await().until(() -> board.pools("mlp", "1").size() == 2
        && board.pools("mlp", "1").get(0).queueDepth() == 5);
    PoolLoad n1 = board.pools("mlp", "1").get(0);
    assertThat(n1).extracting("nodeId", "managerId", "ready", "queueDepth", "inFlight", "capacity", "busyWorkers")
        .containsExactly("n1", "m1", true, 5, 1, 10, 1);
    assertThat(n1.hasRoom()).isTrue();
    assertThat(n1.load()).isEqualTo(6);
    assertThat(board.pools("mlp", "2")).isEmpty();

    clock.addAndGet(Duration.ofMillis(1500).toNanos());
    publish(report("n2", "m2", 2, 4));
    await().until(() -> board.pools("mlp", "1").get(1).queueDepth() == 4);
    assertThat(board.pools("mlp", "1").get(0).age()).isEqualTo(Duration.ofMillis(1500));

    clock.addAndGet(Duration.ofMillis(501).toNanos());
    assertThat(board.pools("mlp", "1")).extracting(PoolLoad::nodeId).containsExactly("n2");
    assertThat(board.all()).extracting(PoolLoad::nodeId).containsExactly("n2");
  }

  @Test
  void aGoneReportRetiresOnlyItsOwnManagersEntryAndDeadNodesAreLeftOut() {
    publish(report("n1", "old", 7, 1));
    await().until(() -> board.pools("mlp", "1").size() == 1);
    publish(report("n1", "new", 1, 2)); // the restarted manager starts counting again
    publish(report("n1", "old", 8, 0).put("gone", true));
    publish(report("n2", "m2", 1, 0));
    await().until(() -> board.pools("mlp", "1").size() == 2);
    assertThat(board.pools("mlp", "1").get(0)).extracting("managerId", "queueDepth").containsExactly("new", 2);

    publish(report("n2", "m2", 2, 0).put("gone", true));
    await().until(() -> board.pools("mlp", "1").size() == 1);

    publish(report("n2", "m3", 1, 0));
    await().until(() -> board.pools("mlp", "1").size() == 2);
    alive.remove("n2");
    clock.addAndGet(Duration.ofMillis(200).toNanos()); // liveness is re-read at most every 100 ms
    assertThat(board.pools("mlp", "1")).extracting(PoolLoad::nodeId).containsExactly("n1");
  }

  @Test
  void malformedReportsAreIgnored() {
    publish(new JsonObject().put("deployment", "mlp"));
    publish(report("n1", "m1", 1, 0).put("queueDepth", "many"));
    publish(report("n1", "m1", 1, 0).put("capacity", -1));
    publish(report("n2", "m2", 1, 0));
    await().until(() -> board.pools("mlp", "1").size() == 1);
    assertThat(board.pools("mlp", "1")).extracting(PoolLoad::nodeId).containsExactly("n2");
  }
}
