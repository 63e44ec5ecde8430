package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The {@code kiln} command end to end, in separate JVMs as a user runs it: a head and a node started with
 * {@code start --foreground}, a third node started the ordinary way ({@code start} in the background), the
 * quickstart deployed with {@code deploy}, inference through every node's gateway, {@code status --json},
 * SIGKILL of a node, and {@code stop}. Every port is 0 (picked by the node and read from its
 * {@code .kiln/nodes} record), the cluster name is unique and {@code kiln.home} is a folder of this test,
 * so runs never meet each other or a developer's cluster. Ordered: later tests take nodes away.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KilnCliIT {

  static final Duration START = Duration.ofSeconds(180);
  static final Duration COMMAND = Duration.ofSeconds(120);
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  static CliProcesses cli;
  static KilnProcess head;
  static KilnProcess n1;
  static final Map<String, Integer> httpPorts = new HashMap<>();

  @BeforeAll
  static void startCluster() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", UUID.randomUUID().toString().substring(0, 8)));
    String name = "it-" + UUID.randomUUID();
    List<String> common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
        "--cluster-name", name, "--cpus", "2", "--request-timeout-ms", "60000", "--warmup-seconds", "1");
    head = cli.startNode("head", args(List.of("start", "--head", "--foreground", "--node-id", "head"), common));
    JsonNode headEntry = awaitEntry("head", head);
    assertThat(headEntry.path("head").asBoolean()).isTrue();
    // A short warm-up, but the whole of it: the node says when it is over (and so ready).
    cli.awaitWarm("head", head, Duration.ofSeconds(60));
    String join = "127.0.0.1:" + headEntry.path("clusterPort").asInt();

    n1 = cli.startNode("n1", args(List.of("start", "--address", join, "--foreground", "--node-id", "n1"), common));
    // The way users start nodes: in the background; the command returns once the node serves.
    CliProcesses.Result n2 = cli.run(START, args(List.of("start", "--address", join, "--node-id", "n2"), common));
    assertThat(n2.code()).as(n2.output()).isZero();
    assertThat(n2.output()).contains("kiln: started node n2");
    awaitEntry("n1", n1);
    for (String id : List.of("head", "n1", "n2")) {
      httpPorts.put(id, cli.entry(id).orElseThrow().path("httpPort").asInt());
    }
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (cli != null) {
      cli.close();
    }
  }

  private static String[] args(List<String> first, List<String> rest) {
    List<String> all = new ArrayList<>(first);
    all.addAll(rest);
    return all.toArray(String[]::new);
  }

  private static JsonNode awaitEntry(String id, KilnProcess p) {
    return cli.awaitEntry(id, p, START, false);
  }

  static HttpResponse<String> http(int port, String path, String jsonBody) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(60));
    if (jsonBody != null) {
      b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(jsonBody));
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode status(String node) throws Exception {
    return JSON.readTree(http(httpPorts.get(node), "/api/v1/status", null).body());
  }

  private static JsonNode deployment(JsonNode status, String name) {
    for (JsonNode d : status.path("deployments")) {
      if (d.path("name").asText().equals(name)) {
        return d;
      }
    }
    return JSON.createObjectNode();
  }

  private static long readyPools(JsonNode deployment) {
    long n = 0;
    for (JsonNode p : deployment.path("pools")) {
      n += p.path("ready").asBoolean() ? 1 : 0;
    }
    return n;
  }

  private static Map<String, Boolean> alive(JsonNode status) {
    Map<String, Boolean> out = new HashMap<>();
    status.path("nodes").forEach(n -> out.put(n.path("id").asText(), n.path("alive").asBoolean()));
    return out;
  }

  /** Infers the quickstart request through {@code node}'s gateway and checks torch's numbers; returns where it ran. */
  private static String inferQuickstart(String node) throws Exception {
    return inferQuickstart(httpPorts.get(node), node);
  }

  /** As {@link #inferQuickstart(String)}, through the gateway on {@code port}. */
  static String inferQuickstart(int port, String node) throws Exception {
    Path root = KilnCliTest.repositoryRoot();
    HttpResponse<String> r = http(port, "/v2/models/mlp/infer",
        Files.readString(root.resolve("deploy/examples/mlp-request.json")));
    assertThat(r.statusCode()).as(node + ": " + r.body()).isEqualTo(200);
    JsonNode body = JSON.readTree(r.body());
    JsonNode expected = JSON.readTree(root.resolve("models/mlp/expected.json").toFile()).path("output").path("data");
    JsonNode data = body.path("outputs").path(0).path("data");
    assertThat(data.size()).isEqualTo(expected.size()).isEqualTo(20);
    for (int i = 0; i < data.size(); i++) {
      assertThat(data.get(i).asDouble()).as("output[%d] via %s", i, node).isCloseTo(expected.get(i).asDouble(),
          within(1e-5));
    }
    return body.path("parameters").path("kiln_node").asText();
  }

  @Test
  @Order(1)
  void deployTheQuickstartAndInferThroughEveryNode() throws Exception {
    Path quickstart = KilnCliTest.repositoryRoot().resolve("deploy/examples/quickstart.yaml");
    CliProcesses.Result dry = cli.run(COMMAND, "deploy", quickstart.toString(), "--dry-run");
    assertThat(dry.code()).as(dry.output()).isZero();
    assertThat(dry.output()).contains("mlp@1: 6 workers on 3 nodes").contains("dry run: nothing was changed");

    CliProcesses.Result applied = cli.run(COMMAND, "deploy", quickstart.toString());
    assertThat(applied.code()).as(applied.output()).isZero();
    assertThat(applied.output()).contains("applied 1 deployment(s)");

    await().atMost(START).pollInterval(Duration.ofMillis(500)).until(() -> {
      JsonNode mlp = deployment(status("head"), "mlp");
      return mlp.path("phase").asText().equals("READY") && readyPools(mlp) == 3;
    });
    for (String node : List.of("head", "n1", "n2")) {
      // Every gateway sees the pools, and its own runs the request.
      await().atMost(Duration.ofSeconds(30)).until(() -> http(httpPorts.get(node), "/v2/models/mlp/ready", null)
          .statusCode() == 200);
      assertThat(inferQuickstart(node)).isEqualTo(node);
    }
  }

  @Test
  @Order(2)
  void statusJsonListsThreeAliveNodesAndTheDeploymentReadyOnThreePools() throws Exception {
    CliProcesses.Result r = cli.run(COMMAND, "status", "--json");
    assertThat(r.code()).as(r.output()).isZero();
    JsonNode status = JSON.readTree(r.output());
    assertThat(alive(status)).containsExactlyInAnyOrderEntriesOf(Map.of("head", true, "n1", true, "n2", true));
    assertThat(status.path("leader").asText()).isEqualTo("head");
    JsonNode mlp = deployment(status, "mlp");
    assertThat(mlp.path("phase").asText()).isEqualTo("READY");
    assertThat(mlp.path("servingVersion").asText()).isEqualTo("1");
    assertThat(readyPools(mlp)).isEqualTo(3);
    List<String> poolNodes = new ArrayList<>();
    mlp.path("pools").forEach(p -> poolNodes.add(p.path("node").asText()));
    assertThat(poolNodes).containsExactlyInAnyOrder("head", "n1", "n2");

    CliProcesses.Result table = cli.run(COMMAND, "status");
    assertThat(table.code()).as(table.output()).isZero();
    assertThat(table.output()).contains("NODES (leader: head)").containsPattern("mlp\\s+1\\s+1\\s+READY\\s+3/3\\s+6/6");
  }

  @Test
  @Order(3)
  void aKilledNodeIsSeenDeadAndTheOthersKeepServing() throws Exception {
    long killedAt = System.nanoTime();
    n1.kill(); // SIGKILL: no shutdown hook, no goodbye to the cluster
    assertThat(n1.isAlive()).isFalse();

    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250))
        .until(() -> Boolean.FALSE.equals(alive(status("head")).get("n1")));
    Duration noticed = Duration.ofNanos(System.nanoTime() - killedAt);
    assertThat(noticed).as("time until status showed n1 dead").isLessThan(Duration.ofSeconds(20));
    // Each node learns of the death from its own membership events: n2's view may lag the head's a little.
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250))
        .until(() -> Boolean.FALSE.equals(alive(status("n2")).get("n1")));
    assertThat(alive(status("n2"))).containsEntry("n1", false).containsEntry("head", true).containsEntry("n2", true);

    for (String node : List.of("head", "n2")) {
      for (int i = 0; i < 5; i++) {
        assertThat(inferQuickstart(node)).isEqualTo(node);
      }
    }
  }

  @Test
  @Order(4)
  void stopStopsTheRestCleanly() throws Exception {
    long n2Pid = cli.entry("n2").orElseThrow().path("pid").asLong();
    ProcessHandle n2 = ProcessHandle.of(n2Pid).orElseThrow();

    CliProcesses.Result r = cli.run(COMMAND, "stop");

    assertThat(r.code()).as(r.output()).isZero();
    assertThat(r.output()).contains("stopped node n2").contains("stopped node head").doesNotContain("killed");
    assertThat(head.process().waitFor(10, TimeUnit.SECONDS)).isTrue();
    n2.onExit().get(10, TimeUnit.SECONDS);
    assertThat(cli.entries()).isEmpty();
    assertThat(cli.output("head")).contains("kiln: stopping node head...");
    assertThat(Files.readString(cli.home().resolve(".kiln/logs/n2.log"))).contains("kiln: stopping node n2...");

    CliProcesses.Result again = cli.run(COMMAND, "stop");
    assertThat(again.output()).contains("no local Kiln node is running");
  }

  @Test
  @Order(5)
  void aNodeStartedInTheBackgroundThatCannotJoinSaysWhyInOneLine() throws Exception {
    int closed = KilnCliTest.closedPort();
    CliProcesses.Result r = cli.run(START, "start", "--address", "127.0.0.1:" + closed, "--node-id", "lonely",
        "--port", "0", "--grpc-port", "0", "--cluster-port", "0", "--cluster-name", "it-" + UUID.randomUUID());

    assertThat(r.code()).isEqualTo(1);
    assertThat(r.output().lines().toList()).singleElement().asString()
        .startsWith("kiln: could not start node lonely: could not join a cluster named 'it-")
        .contains("through 127.0.0.1:" + closed + ": no member answered")
        .endsWith("(log: " + cli.home().resolve(".kiln/logs/lonely.log") + ")");
    assertThat(cli.entries()).isEmpty();
  }
}
