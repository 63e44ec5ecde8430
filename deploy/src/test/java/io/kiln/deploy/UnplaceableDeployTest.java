package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.deploy.node.ServingNode;
import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * A deployment no node could ever host, met where users meet it: {@code kiln up --file} exits 1 at once, and on a
 * node composed as {@code kiln start} composes it ({@link ServingNode}) the management API answers 400 and
 * {@code kiln deploy --wait} exits 1 at once, each naming the resource and the node's capacity; a deployment that
 * fits still deploys, and one that says it waits for capacity is applied and {@code --wait} prints what it waits for.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class UnplaceableDeployTest {

  /** Far below the 60 s a worker waits for its placement and the 300 s kiln up waits for READY. */
  static final Duration AT_ONCE = Duration.ofSeconds(15);
  static final String NEEDS = "(solo: cannot host one worker: each needs {CPU: 64}, node total {CPU: 2}); it needs a"
      + " node with CPU \u2265 64.";

  @TempDir
  static Path dir;

  private LocalCluster cluster;
  private ServingNode node;
  private final HttpClient http = HttpClient.newHttpClient();

  static String deployment(String name, String pool) {
    return """
        deployments:
          - name: %s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
            pool: %s
        """.formatted(name, pool);
  }

  record Run(int code, String out, String err, Duration took) {
  }

  static Run kiln(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    long start = System.nanoTime();
    int code = KilnCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new Run(code, out.toString(), err.toString(), Duration.ofNanos(System.nanoTime() - start));
  }

  @BeforeAll
  void start() throws Exception {
    cluster = LocalCluster.create();
    KilnRuntime rt = cluster.startNode(new NodeOptions("solo", "127.0.0.1", Resources.cpu(2), Map.of()))
        .toCompletableFuture().get(60, TimeUnit.SECONDS);
    GatewayOptions options = GatewayOptions.builder().host("127.0.0.1").httpPort(0).grpcPort(0)
        .bindJvmMetrics(false).build();
    node = ServingNode.start(rt, options, null, dir.resolve("home")).toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private String address() {
    return "http://127.0.0.1:" + node.httpPort();
  }

  @Test
  void kilnUpWithADeploymentItsNodeCanNeverHostExitsAtOnceNamingTheResourceAndTheCapacity() throws IOException {
    Path file = Files.writeString(dir.resolve("up-huge.yaml"),
        deployment("huge", "{workers_per_node: 1, worker_resources: {CPU: 64}}"));
    Run r = kiln("up", "--file", file.toString(), "--node-id", "solo", "--cpus", "2", "--gpus", "0", "--port", "0",
        "--grpc-port", "0", "--warmup-seconds", "0");
    System.out.println("[unplaceable] kiln up --file up-huge.yaml exited " + r.code() + " after " + r.took().toMillis()
        + " ms (node start included)");

    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
    assertThat(r.took()).isLessThan(AT_ONCE);
    assertThat(r.err().lines().toList()).containsExactly(
        "kiln: " + file + " cannot run on this node (kiln up runs a single node, which no other node joins); nothing"
            + " was applied:",
        "  deployments[0].pool: no node of this cluster can ever host a worker of huge@1 " + NEEDS + " If such a"
            + " node will join, set pool.wait_for_capacity: true to apply it now and wait for that node");
    assertThat(r.out()).doesNotContain("is ready");
  }

  @Test
  void kilnUpDoesNotWaitForCapacityEither() throws IOException {
    Path file = Files.writeString(dir.resolve("up-waits.yaml"),
        deployment("huge", "{workers_per_node: 1, worker_resources: {CPU: 64}, wait_for_capacity: true}"));
    Run r = kiln("up", "--file", file.toString(), "--node-id", "solo", "--cpus", "2", "--gpus", "0", "--port", "0",
        "--grpc-port", "0", "--warmup-seconds", "0");

    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
    assertThat(r.took()).isLessThan(AT_ONCE);
    assertThat(r.err().trim()).isEqualTo("kiln: deploying " + file + " failed: huge can never run here, as kiln up"
        + " runs a single node which no other node joins: UNSCHEDULABLE: no node selected: no node can host a worker"
        + " (solo: cannot host one worker: each needs {CPU: 64}, node total {CPU: 2}); waiting for a node with"
        + " CPU \u2265 64 to join");
  }

  @Test
  void theManagementApiRefusesItWith400AndStoresNothingDryRunOrNot() throws Exception {
    String yaml = deployment("huge-api", "{workers_per_node: 1, worker_resources: {CPU: 64}}");
    for (String query : List.of("", "?dry_run=true")) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(address() + "/api/v1/deployments" + query))
          .POST(HttpRequest.BodyPublishers.ofString(yaml)).build(), HttpResponse.BodyHandlers.ofString());

      assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
      JsonNode problem = new ObjectMapper().readTree(r.body()).path("problems").get(0);
      assertThat(problem.path("file").asText()).isEqualTo("cluster");
      assertThat(problem.path("path").asText()).isEqualTo("deployments[0].pool");
      assertThat(problem.path("message").asText()).contains("huge-api@1 " + NEEDS);
    }
    assertThat(node.serve().desired()).doesNotContainKey("huge-api");
  }

  @Test
  void kilnDeployWaitFailsAtOnceSayingWhatNoNodeHas() throws IOException {
    Path file = Files.writeString(dir.resolve("huge.yaml"),
        deployment("huge-cli", "{workers_per_node: 1, worker_resources: {CPU: 64}}"));
    Run r = kiln("deploy", file.toString(), "--wait", "--address", address());
    System.out.println("[unplaceable] kiln deploy --wait huge.yaml exited " + r.code() + " after "
        + r.took().toMillis() + " ms");

    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
    assertThat(r.took()).isLessThan(AT_ONCE);
    List<String> lines = r.err().lines().toList();
    assertThat(lines.get(0)).isEqualTo(file + " cannot run on this cluster; nothing was applied:");
    assertThat(lines.get(1)).startsWith("  deployments[0].pool: no node of this cluster can ever host a worker of"
        + " huge-cli@1 " + NEEDS);
    assertThat(r.out()).doesNotContain("waiting up to");
    assertThat(node.serve().desired()).doesNotContainKey("huge-cli");
  }

  @Test
  void aDeploymentThatWaitsForCapacityIsAppliedAndWaitSaysWhatItWaitsFor() throws IOException {
    Path file = Files.writeString(dir.resolve("waits.yaml"),
        deployment("huge-waits", "{workers_per_node: 1, worker_resources: {CPU: 64}, wait_for_capacity: true}"));
    Run r = kiln("deploy", file.toString(), "--wait", "--timeout", "2", "--address", address());

    assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
    assertThat(r.out()).contains("applied 1 deployment(s)").contains("  huge-waits 1: UNSCHEDULABLE (no node selected:"
        + " no node can host a worker (solo: cannot host one worker: each needs {CPU: 64}, node total {CPU: 2});"
        + " waiting for a node with CPU \u2265 64 to join)");
    assertThat(r.err()).startsWith("kiln: timed out after 2 s; not ready: huge-waits (UNSCHEDULABLE)");
  }

  @Test
  void aDeploymentThatFitsStillDeploys() throws IOException {
    Path file = Files.writeString(dir.resolve("fits.yaml"),
        deployment("fits", "{workers_per_node: 1, worker_resources: {CPU: 0.5}}"));
    Run r = kiln("deploy", file.toString(), "--wait", "--timeout", "120", "--address", address());

    assertThat(r.code()).as(r.out() + r.err()).isZero();
    assertThat(r.out()).contains("  fits 1: READY").contains("all 1 deployment(s) ready");
  }
}
