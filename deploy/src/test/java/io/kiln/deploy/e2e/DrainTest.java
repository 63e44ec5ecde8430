package io.kiln.deploy.e2e;

import static io.kiln.deploy.e2e.ServingCluster.join;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.DrainOptions;
import io.kiln.deploy.node.DrainReport;
import io.kiln.deploy.node.ServingNode;
import io.kiln.pools.PoolLoad;
import io.kiln.testkit.OipRequest;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A node's drain, sequenced on real in-process nodes ({@link ServingCluster}) with a pool of {@code builtin:sleep}
 * on every node: the server turns not ready at once while liveness and the models stay up, what the node's pool
 * runs or queues finishes, a request reaching the draining node's gateway runs on another node, and the drain
 * ends once idle; with a model that holds its worker the grace (on an injected clock) or a second signal ends it.
 */
@Tag("slow")
class DrainTest {

  private static final String YAML = """
      deployments:
        - name: slow
          version: "1"
          model:
            uri: builtin:sleep
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 1]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 1]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
          queue: {max_queued: 16, timeout_ms: 60000}
      """;

  private final Http http = new Http();

  private static String sleep(int millis) {
    return OipRequest.fp32("x", new long[] {1, 1}, millis).json();
  }

  /** A request to {@code via}'s gateway that runs on {@code pinned} (null: wherever the gateway routes it). */
  private CompletableFuture<Http.Response> send(ServingNode via, int millis, String pinned) {
    return CompletableFuture.supplyAsync(() -> pinned == null
        ? http.postJson(via.httpPort(), "/v2/models/slow/infer", sleep(millis))
        : http.postJson(via.httpPort(), "/v2/models/slow/infer", sleep(millis), "kiln-node", pinned));
  }

  private static String ranOn(Http.Response r) {
    return r.json().getJsonObject("parameters").getString("kiln_node");
  }

  private static void awaitBusy(ServingCluster c, String node, int outstanding) {
    await().atMost(ServingCluster.WAIT).until(() -> c.stats("slow", "1", node).outstanding() >= outstanding);
  }

  @Test
  void theServerTurnsNotReadyAtOnceQueuedWorkFinishesAndNewRequestsRunElsewhere() {
    try (ServingCluster c = ServingCluster.start("node-a", "node-b")) {
      c.deploy(YAML);
      c.awaitReady("slow", 2);
      ServingNode b = c.node("node-b");
      CompletableFuture<Http.Response> running = send(b, 1500, "node-b");
      CompletableFuture<Http.Response> queued = send(b, 500, "node-b");
      awaitBusy(c, "node-b", 2);

      CompletionStage<DrainReport> drain = b.drain(DrainOptions.of(Duration.ofSeconds(60))
          .withLinger(Duration.ofMillis(300)));
      Http.Response ready = http.get(b.httpPort(), "/v2/health/ready");
      assertThat(ready.status()).isEqualTo(503);
      assertThat(ready.text()).contains("draining");
      assertThat(http.get(b.httpPort(), "/v2/health/live").status()).isEqualTo(200);
      await().atMost(ServingCluster.WAIT).until(() -> c.node("node-a").board().pools("slow", "1").stream()
          .anyMatch(l -> l.nodeId().equals("node-b") && l.leaving()));

      Http.Response arrived = send(b, 0, null).join();
      assertThat(arrived.status()).as(arrived.text()).isEqualTo(200);
      assertThat(ranOn(arrived)).as("a request reaching the draining node runs elsewhere").isEqualTo("node-a");
      assertThat(ranOn(send(c.node("node-a"), 0, null).join())).isEqualTo("node-a");

      DrainReport report = join(drain);
      assertThat(report.drained()).as(report.describe()).isTrue();
      // The server wrote both answers before its drain reported done; the client may read them a moment later.
      await().atMost(ServingCluster.WAIT).until(() -> running.isDone() && queued.isDone());
      assertThat(running.join().status()).isEqualTo(200);
      assertThat(queued.join().status()).isEqualTo(200);
      assertThat(ranOn(queued.join())).isEqualTo("node-b");
      assertThat(c.node("node-a").board().pools("slow", "1")).filteredOn(l -> l.nodeId().equals("node-b"))
          .allMatch(PoolLoad::leaving);
      c.crash("node-b"); // closes its serving parts; the runtime goes as a crash would, which is not under test here
      await().atMost(ServingCluster.WAIT).until(() -> http.postJson(c.node("node-a").httpPort(),
          "/v2/models/slow/infer", sleep(0)).status() == 200);
    }
  }

  @Test
  void theGraceOrASecondSignalEndsADrainThatAModelHolds() {
    try (ServingCluster c = ServingCluster.start("node-a", "node-b", "node-c")) {
      c.deploy(YAML);
      c.awaitReady("slow", 3);
      AtomicLong clock = new AtomicLong();
      ServingNode b = c.node("node-b");
      CompletableFuture<Http.Response> held = send(b, 10_000, "node-b");
      awaitBusy(c, "node-b", 1);

      CompletableFuture<DrainReport> drain = b.drain(DrainOptions.of(Duration.ofSeconds(5)).withLinger(Duration.ZERO)
          .withClock(clock::get)).toCompletableFuture();
      await().during(Duration.ofMillis(500)).atMost(ServingCluster.WAIT).until(() -> !drain.isDone());
      clock.addAndGet(Duration.ofSeconds(5).toNanos());
      DrainReport over = join(drain);
      assertThat(over.drained()).isFalse();
      assertThat(over.cutShort()).isFalse();
      assertThat(over.inFlight()).isEqualTo(1);
      assertThat(over.running()).isEqualTo(1);
      assertThat(over.took()).isEqualTo(Duration.ofSeconds(5));
      assertThat(over.describe()).startsWith("grace over after 5.0 s: 1 request(s) still in flight");

      ServingNode node3 = c.node("node-c");
      CompletableFuture<Http.Response> held3 = send(node3, 10_000, "node-c");
      awaitBusy(c, "node-c", 1);
      CompletableFuture<DrainReport> cut = node3.drain(DrainOptions.of(Duration.ofSeconds(60))
          .withClock(clock::get)).toCompletableFuture();
      node3.cutDrainShort();
      DrainReport report = join(cut);
      assertThat(report.cutShort()).isTrue();
      assertThat(report.describe()).startsWith("drain cut short after 0.0 s");
      assertThat(held.join().status()).isEqualTo(200);
      assertThat(held3.join().status()).isEqualTo(200);
    }
  }

  @Test
  void whenTheLeaderDrainsAndLeavesTheNextMemberLeadsAndReconciles() {
    try (ServingCluster c = ServingCluster.start("node-a", "node-b")) {
      c.deploy(YAML);
      c.awaitReady("slow", 2);
      ServingNode a = c.node("node-a");
      assertThat(a.runtime().isLeader()).isTrue();

      DrainReport report = join(a.drain(DrainOptions.of(Duration.ofSeconds(30)).withLinger(Duration.ofMillis(100))));
      assertThat(report.drained()).as(report.describe()).isTrue();
      c.stop("node-a");
      ServingNode b = c.node("node-b");
      await().atMost(ServingCluster.WAIT).until(() -> b.runtime().isLeader());
      assertThat(http.postJson(b.httpPort(), "/v2/models/slow/infer", sleep(0)).status()).isEqualTo(200);

      c.deploy(YAML.replace("version: \"1\"", "version: \"2\""));
      await().atMost(ServingCluster.WAIT).until(() -> {
        var s = b.serve().statuses().get("slow");
        return s != null && "2".equals(s.servingVersion())
            && s.phase() == io.kiln.serve.DeploymentStatus.Phase.READY;
      });
      Http.Response r = http.postJson(b.httpPort(), "/v2/models/slow/infer", sleep(0));
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.json().getString("model_version")).isEqualTo("2");
    }
  }
}
