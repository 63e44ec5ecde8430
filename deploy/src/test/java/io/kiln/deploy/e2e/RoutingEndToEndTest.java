package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolStats;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Routing with real pools on three nodes (node-2 labelled {@code zone=b}), serving built-in identity models:
 * {@code held}, on every node, whose queue holds two requests and whose batches wait 30 s to fill unless
 * a request brings the full two rows — so a test can hold a pool full for as long as it needs; and
 * {@code picky}, on node-2 only. Ordered: the last test takes node-2 away.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Tag("slow")
class RoutingEndToEndTest {

  private static final String YAML = """
      deployments:
        - name: held
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, -1]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, -1]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 2, max_batch_delay_ms: 30000}
          queue: {max_queued: 2, timeout_ms: 60000}
        - name: picky
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, node_selector: {zone: b}}
      """;

  private final Http http = new Http();
  private ServingCluster cluster;

  @BeforeAll
  void deploy() {
    Map<String, Map<String, String>> nodes = new LinkedHashMap<>();
    nodes.put("node-1", Map.of());
    nodes.put("node-2", Map.of("zone", "b"));
    nodes.put("node-3", Map.of());
    cluster = ServingCluster.start(nodes);
    cluster.deploy(YAML);
    cluster.awaitReady("held", 3);
    cluster.awaitReady("picky", 1);
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private int port(String node) {
    return cluster.node(node).httpPort();
  }

  /** An identity request: {@code rows} × {@code cols} FP32 values 0.5, 1.5, ... */
  private static String request(String id, int rows, int cols) {
    float[] data = new float[rows * cols];
    for (int i = 0; i < data.length; i++) {
      data[i] = i + 0.5f;
    }
    return OipRequest.fp32("x", new long[] {rows, cols}, data).id(id).json();
  }

  private static void assertIdentity(Http.Response r, int rows, int cols) {
    JsonObject y = r.json().getJsonArray("outputs").getJsonObject(0);
    assertThat(y.getString("name")).isEqualTo("y");
    assertThat(y.getJsonArray("shape")).isEqualTo(new JsonArray().add(rows).add(cols));
    JsonArray data = y.getJsonArray("data");
    assertThat(data).hasSize(rows * cols);
    for (int i = 0; i < rows * cols; i++) {
      assertThat(data.getDouble(i)).isEqualTo(i + 0.5);
    }
  }

  private double metric(String node, String name, Map<String, String> labels) {
    return PromText.parse(http.get(port(node), "/metrics").text()).sum(name, labels);
  }

  private static void assertRetryAfter(Http.Response r) {
    assertThat(r.status()).as(r.text()).isEqualTo(503);
    assertThat(r.header("Retry-After")).as("Retry-After").isNotNull();
    assertThat(Integer.parseInt(r.header("Retry-After"))).isPositive();
    assertThat(r.json().getString("error")).isNotBlank();
  }

  @Test
  @Order(1)
  void aRequestPinnedToANodeWithoutAReadyPoolIs503WithRetryAfter() {
    Http.Response byParameter = http.postJson(port("node-1"), "/v2/models/picky/infer",
        new JsonObject(request("p-1", 1, 4)).put("parameters", new JsonObject().put("node_id", "node-3")).encode());
    assertRetryAfter(byParameter);
    assertThat(byParameter.json().getString("error")).contains("node-3");

    Http.Response byHeader = http.postJson(port("node-3"), "/v2/models/picky/infer", request("p-2", 1, 4),
        "kiln-node", "node-1");
    assertRetryAfter(byHeader);
    assertThat(byHeader.json().getString("error")).contains("node-1");
  }

  @Test
  @Order(2)
  void withoutALocalPoolARequestRunsWhereThePoolIs() {
    Http.Response r = http.postJson(port("node-1"), "/v2/models/picky/infer", request("b-1", 3, 4));

    assertThat(r.status()).as(r.text()).isEqualTo(200);
    assertThat(r.json().getJsonObject("parameters").getString("kiln_node")).isEqualTo("node-2");
    assertIdentity(r, 3, 4);
    assertThat(metric("node-1", "kiln_gateway_routes_total", Map.of("reason", "balanced"))).isGreaterThanOrEqualTo(1);
  }

  @Test
  @Order(3)
  void aFullLocalPoolSpillsToAnotherNodeAndRequestsWhoseClientLeftNeverRun() {
    // Two one-row requests of different shapes cannot batch together: the first waits 30 s for a second
    // row, the other waits behind it, and the queue (max 2) is full.
    Http.Held first = new Http.Held(port("node-1"), "/v2/models/held/infer", request("h-1", 1, 1), "kiln-node", "node-1");
    Http.Held second = null;
    try {
      await().atMost(ServingCluster.WAIT).until(() -> cluster.stats("held", "1", "node-1").queueDepth() == 1);
      second = new Http.Held(port("node-1"), "/v2/models/held/infer", request("h-2", 1, 2), "kiln-node", "node-1");
      await().atMost(ServingCluster.WAIT).until(() -> cluster.stats("held", "1", "node-1").queueDepth() == 2);
      // Routing goes by the reports on the load board: wait until node-1's gateway sees its pool full.
      await().atMost(ServingCluster.WAIT).until(() -> cluster.node("node-1").board().pools("held", "1").stream()
          .filter(p -> p.nodeId().equals("node-1")).anyMatch(p -> !p.hasRoom()));

      Http.Response pinned = http.postJson(port("node-1"), "/v2/models/held/infer", request("h-3", 2, 1),
          "kiln-node", "node-1");
      assertRetryAfter(pinned);
      assertThat(pinned.json().getString("error")).contains("capacity");

      // Two rows fill a batch at once, wherever they land.
      Http.Response spilled = http.postJson(port("node-1"), "/v2/models/held/infer", request("h-4", 2, 1));
      assertThat(spilled.status()).as(spilled.text()).isEqualTo(200);
      assertThat(spilled.json().getJsonObject("parameters").getString("kiln_node")).isIn("node-2", "node-3");
      assertIdentity(spilled, 2, 1);
      assertThat(metric("node-1", "kiln_gateway_routes_total", Map.of("reason", "spill"))).isEqualTo(1);
    } finally {
      first.close();
      if (second != null) {
        second.close();
      }
    }

    // The clients went away: their requests leave the queue without ever reaching a worker.
    await().atMost(ServingCluster.WAIT).untilAsserted(() -> {
      PoolStats s = cluster.stats("held", "1", "node-1");
      assertThat(s.cancelled()).isEqualTo(2);
      assertThat(s.queueDepth()).isZero();
    });
    PoolStats after = cluster.stats("held", "1", "node-1");
    assertThat(after.completed()).isZero();
    assertThat(after.inFlightRequests()).isZero();
    assertThat(after.expired()).isZero();
    await().atMost(ServingCluster.WAIT).until(() -> metric("node-1", "kiln_gateway_requests_total",
        Map.of("model", "held", "outcome", "cancelled")) == 2);
    assertThat(metric("node-1", "kiln_pool_requests_total",
        Map.of("deployment", "held", "node", "node-1", "outcome", "cancelled"))).isEqualTo(2);
  }

  @Test
  @Order(4)
  void whenTheOnlyNodeWithAPoolDiesRequestsAre503WithRetryAfter() {
    cluster.crash("node-2");

    await().atMost(ServingCluster.WAIT).until(() -> cluster.node("node-1").board().pools("picky", "1").stream()
        .noneMatch(PoolLoad::ready));
    await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(200)).until(() ->
        http.postJson(port("node-1"), "/v2/models/picky/infer", request("d-1", 1, 4)).status() == 503);
    assertRetryAfter(http.postJson(port("node-3"), "/v2/models/picky/infer", request("d-2", 1, 4)));
    // The other deployment keeps serving on the surviving nodes.
    Http.Response held = http.postJson(port("node-3"), "/v2/models/held/infer", request("d-3", 2, 3));
    assertThat(held.status()).as(held.text()).isEqualTo(200);
    assertThat(held.json().getJsonObject("parameters").getString("kiln_node")).isEqualTo("node-3");
  }
}
