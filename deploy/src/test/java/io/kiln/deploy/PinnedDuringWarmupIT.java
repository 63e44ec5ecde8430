package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.KilnProcess;
import io.kiln.testkit.OipRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Issue #37's second finding: requests pinned to a node were all refused with 503 while the nodes were still in their
 * start-up warm-up, though {@code kiln status} showed every pool READY, and single requests pinned the same way were
 * served. Cause: a node in its start-up warm-up held its own gateway not ready ({@code /v2/health/ready} 503), and
 * that gateway refused every inference request for a deployment it was not itself warming, pinned or not, whichever
 * node it was pinned to: the refusal was the <em>entry</em> node's. Now a warming node keeps only its readiness at
 * 503 (load balancers stay away) and serves whatever reaches it as soon as the target pool is READY.
 *
 * <p>Asserted, with a head (warm-up 1 s) and {@code n2}, {@code n3} hosting the pools, {@code n2} started last with a
 * long warm-up: while {@code n2} warms (its {@code /v2/health/ready} and the model's ready still 503) and its pool is
 * READY, a request pinned to {@code n2} through the head is served by {@code n2}'s pool, and requests through
 * {@code n2} (pinned to {@code n3}, or not) are served too; once {@code n2} reports ready nothing changes.
 */
class PinnedDuringWarmupIT {

  static final Duration START = Duration.ofSeconds(180);
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, node_selector: {zone: x}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 1}
      """;

  CliProcesses cli;
  final Map<String, KilnProcess> processes = new LinkedHashMap<>();
  final Map<String, Integer> ports = new LinkedHashMap<>();

  @AfterEach
  void stop() throws Exception {
    processes.values().forEach(KilnProcess::close);
    if (cli != null) {
      cli.close();
    }
  }

  @Test
  void aWarmingNodeServesPinnedAndUnpinnedRequestsOnceThePoolsAreReadyWhileItsReadinessStays503() throws Exception {
    cli = new CliProcesses(Path.of("target", "kiln-it", "warmup-pin-" + UUID.randomUUID().toString().substring(0, 8)));
    List<String> common = List.of("--foreground", "--host", "127.0.0.1", "--port", "0", "--grpc-port", "0",
        "--cluster-port", "0", "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--token", TOKEN);
    start("head", List.of("start", "--head"), common, List.of("--warmup-seconds", "0"));
    String join = "127.0.0.1:" + awaitEntry("head").path("clusterPort").asInt();
    start("n3", List.of("start", "--address", join), common, List.of("--labels", "zone=x", "--warmup-seconds", "0"));
    awaitEntry("n3");
    int head = ports.get("head");
    await().atMost(START).pollInterval(Duration.ofMillis(200))
        .until(() -> get(head, "/v2/health/ready").statusCode() == 200);
    HttpResponse<String> applied = call(head, "POST", "/api/v1/deployments", Map.of("Authorization", "Bearer " + TOKEN),
        YAML);
    assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);

    // n2 joins last, with the production warm-up's budget: its pool is READY long before its gateway is.
    start("n2", List.of("start", "--address", join), common, List.of("--labels", "zone=x", "--warmup-seconds", "40"));
    awaitEntry("n2");
    int n2 = ports.get("n2");
    await().atMost(START).pollInterval(Duration.ofMillis(100)).until(() -> {
      JsonNode s = JSON.readTree(call(head, "GET", "/api/v1/status", Map.of("Authorization", "Bearer " + TOKEN), null)
          .body());
      return poolReady(s, "n2") && poolReady(s, "n3");
    });
    HttpResponse<String> n2Ready = get(n2, "/v2/health/ready");
    Assumptions.assumeTrue(n2Ready.statusCode() == 503, "n2's warm-up ended before its pool was READY ("
        + n2Ready.body() + "): nothing to observe on this run");

    // The pinned node's pool serves while that node warms: through a gateway that is not warming.
    HttpResponse<String> toWarmingNode = infer(head, "n2", 1f);
    assertThat(toWarmingNode.statusCode()).as(toWarmingNode.body()).isEqualTo(200);
    assertThat(toWarmingNode.body()).contains("\"kiln_node\":\"n2\"");

    // The warming node serves what enters through it, pinned elsewhere or not, while it still reads not ready.
    HttpResponse<String> throughWarming = infer(n2, "n3", 2f);
    HttpResponse<String> unpinnedThroughWarming = infer(n2, null, 3f);
    HttpResponse<String> modelReadyOnWarming = get(n2, "/v2/models/echo/ready");
    boolean stillWarming = get(n2, "/v2/health/ready").statusCode() == 503;
    Assumptions.assumeTrue(stillWarming, "n2's warm-up ended while the requests were sent");
    assertThat(throughWarming.statusCode()).as(throughWarming.body()).isEqualTo(200);
    assertThat(throughWarming.body()).contains("\"kiln_node\":\"n3\"");
    assertThat(unpinnedThroughWarming.statusCode()).as(unpinnedThroughWarming.body()).isEqualTo(200);
    assertThat(modelReadyOnWarming.statusCode()).as("load balancers still kept away").isEqualTo(503);
    System.out.println("PinnedDuringWarmupIT: through the warming n2, pinned to n3: " + throughWarming.statusCode()
        + " " + throughWarming.body() + "; unpinned: " + unpinnedThroughWarming.statusCode()
        + "; pinned to n2 through the head: " + toWarmingNode.statusCode());

    // Warm: n2 serves what enters through it.
    await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
        .until(() -> get(n2, "/v2/health/ready").statusCode() == 200);
    HttpResponse<String> afterWarm = infer(n2, "n3", 5f);
    assertThat(afterWarm.statusCode()).as(afterWarm.body()).isEqualTo(200);
    assertThat(afterWarm.body()).contains("\"kiln_node\":\"n3\"");
  }

  private void start(String id, List<String> role, List<String> common, List<String> more) {
    List<String> args = new ArrayList<>(role);
    args.addAll(List.of("--node-id", id));
    args.addAll(common);
    args.addAll(more);
    processes.put(id, KilnProcess.java(KilnCli.class.getName()).jvmFlags("-Dkiln.home=" + cli.home())
        .args(args.toArray(String[]::new)).name(id).directory(cli.home()).log(cli.home().resolve(id + ".out")).start());
  }

  private JsonNode awaitEntry(String id) {
    JsonNode e = cli.awaitEntry(id, processes.get(id), START, true);
    ports.put(id, e.path("httpPort").asInt());
    return e;
  }

  private static HttpResponse<String> infer(int port, String pinnedTo, float v) throws Exception {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", "application/json");
    if (pinnedTo != null) {
      headers.put("kiln-node", pinnedTo);
    }
    return call(port, "POST", "/v2/models/echo/infer", headers, OipRequest.fp32("x", new long[] {1, 2}, v, -v).json());
  }

  private static HttpResponse<String> get(int port, String path) throws Exception {
    return call(port, "GET", path, Map.of(), null);
  }

  private static HttpResponse<String> call(int port, String method, String path, Map<String, String> headers,
                                           String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    headers.forEach(b::header);
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static boolean poolReady(JsonNode status, String node) {
    for (JsonNode d : status.path("deployments")) {
      if (d.path("name").asText().equals("echo")) {
        for (JsonNode p : d.path("pools")) {
          if (p.path("node").asText().equals(node)) {
            return p.path("ready").asBoolean();
          }
        }
      }
    }
    return false;
  }
}
