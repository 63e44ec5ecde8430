package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.WarmupReport.ModelWarmup;
import io.kiln.deploy.node.WarmupReport.Protocol;
import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.micrometer.core.instrument.Counter;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * "Ready means fast" for the user's own models: a node whose warm-up names its deployments stays not ready (the
 * node and each model) until it has driven synthetic requests through its real ports to their very pools, and a
 * deployment that never loads, or whose inputs cannot be synthesised, is named in the report while the node
 * still goes ready after the bound.
 */
@Tag("slow")
class ModelsWarmupTest {

  private static final String HOST = "127.0.0.1";
  private static final Duration WAIT = Duration.ofSeconds(120);

  @TempDir
  Path home;

  private LocalCluster cluster;
  private KilnRuntime runtime;
  private WebClient http;
  private ServingNode node;

  @BeforeEach
  void startRuntime() {
    cluster = LocalCluster.create();
    runtime = ManagedNode.join(cluster.startNode(new NodeOptions("node-a", HOST, Resources.cpu(4), Map.of())));
    http = WebClient.create(cluster.vertx());
  }

  @AfterEach
  void stop() {
    if (node != null) {
      node.close();
    }
    http.close();
    cluster.close();
  }

  private void start(WarmupOptions warmup) {
    GatewayOptions options = GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0).bindJvmMetrics(false).build();
    node = ManagedNode.join(ServingNode.start(runtime, options, null, home, null, warmup));
  }

  private int status(String path) {
    HttpResponse<Buffer> r = ManagedNode.join(http.get(node.httpPort(), HOST, path).send().toCompletionStage());
    return r.statusCode();
  }

  private void apply(String yaml) {
    ManagedNode.join(node.serve().apply(yaml, home.resolve("models.yaml"), false));
  }

  /** Requests the deployment's pools on this node answered, as their own meters count them. */
  private long poolRequests(String deployment) {
    return (long) node.registry().find("kiln.pool.requests").tag("deployment", deployment).tag("outcome", "ok")
        .counters().stream().mapToDouble(Counter::count).sum();
  }

  @Test
  void theNodeAndItsModelStayNotReadyUntilTheUserModelWasWarmedThroughItsOwnPool() {
    start(WarmupOptions.of(Duration.ofSeconds(2)).withDeployments(List.of("echo")));
    assertThat(status("/v2/health/ready")).isEqualTo(503);
    apply("""
        deployments:
          - name: echo
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: INT64, shape: [-1, 3]}, {name: z, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: y, datatype: INT64, shape: [-1, 3]}, {name: w, datatype: FP32, shape: [-1, 2]}]
              warmup: {batch_sizes: [1, 4]}
            pool: {workers_per_node: 1}
            batching: {max_batch_size: 4, max_batch_delay_ms: 0}
        """);

    // Until the node says ready, the model does not either; once it does, the user's pool had the warm-up's traffic.
    AtomicLong atReady = new AtomicLong();
    AtomicReference<Boolean> modelReadyEarly = new AtomicReference<>(false);
    await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
      long served = poolRequests("echo");
      // The model first: one hold covers both, so a model read ready while the node reads not ready just after is
      // a model ready before its node was warm (the other order races with the hold's release).
      boolean modelReady = status("/v2/models/echo/ready") == 200;
      if (status("/v2/health/ready") != 200) {
        if (modelReady) {
          modelReadyEarly.set(true);
        }
        return false;
      }
      atReady.set(served);
      return true;
    });
    assertThat(modelReadyEarly.get()).as("the model read ready before the node was warm").isFalse();
    assertThat(status("/v2/models/echo/ready")).isEqualTo(200);

    WarmupReport report = ManagedNode.join(node.warmup());
    assertThat(report.warmed()).as(report.describe()).isTrue();
    assertThat(report.models()).singleElement().satisfies(m -> {
      assertThat(m.model()).isEqualTo("echo");
      assertThat(m.answered()).isPositive();
      assertThat(m.failed()).isZero();
      assertThat(m.problem()).isNull();
    });
    long warmed = report.models().get(0).answered();
    // Polled just before the node said ready, so the count may lag behind the last few answers, never lead them.
    assertThat(atReady.get()).as("requests the user's pool served before ready").isPositive()
        .isLessThanOrEqualTo(warmed);
    assertThat(poolRequests("echo")).isGreaterThanOrEqualTo(warmed);
    for (Protocol p : Protocol.values()) {
      assertThat(report.answered(p)).as(p.tag()).isPositive();
    }
    assertThat(report.describe()).contains("model echo " + warmed + " answered");
  }

  @Test
  void modelsThatCannotBeWarmedAreNamedAndTheNodeStillGoesReadyAfterTheBound() {
    start(WarmupOptions.of(Duration.ofSeconds(1)).withDeployments(List.of("tight", "ragged", "never"))
        .withLoadTimeout(Duration.ofSeconds(3)));
    // "tight" holds its one worker up to 50 ms a request (builtin:sleep, INT32 values up to 50) and queues one request
    // at most: most of the warm-up's 48 lanes are refused. "ragged" has no shape to synthesise. "never" is not deployed.
    apply("""
        deployments:
          - name: tight
            version: "1"
            model:
              uri: builtin:sleep
              engine: Builtin
              inputs:  [{name: ms, datatype: INT32, shape: [-1, 2]}]
              outputs: [{name: out, datatype: INT32, shape: [-1, 2]}]
              warmup: {batch_sizes: [1]}
            pool: {workers_per_node: 1}
            batching: {max_batch_size: 1, max_batch_delay_ms: 0}
            queue: {max_queued: 1, timeout_ms: 30000}
          - name: ragged
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, -1]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, -1]}]
            pool: {workers_per_node: 1}
        """);

    await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> status("/v2/health/ready") == 200);
    WarmupReport report = ManagedNode.join(node.warmup());

    assertThat(report.ran()).isTrue();
    assertThat(report.warmed()).as(report.describe()).isFalse();
    assertThat(report.models()).extracting(ModelWarmup::model).containsExactly("tight", "ragged", "never");
    ModelWarmup tight = report.models().get(0);
    assertThat(tight.answered()).as(report.describe()).isPositive();
    assertThat(tight.failed()).as(report.describe()).isPositive();
    assertThat(tight.problem()).contains("warm-up request(s) failed (last: ");
    assertThat(report.models().get(1).problem()).isEqualTo("skipped: input 'x' has a variable dimension 1 in [-1, -1]");
    assertThat(report.models().get(2).problem()).startsWith("skipped: no ready pool on this node within 3 s");
    assertThat(report.problem()).contains("tight: ", "ragged: skipped", "never: skipped");
    assertThat(status("/v2/models/tight/ready")).isEqualTo(200);
    assertThat(status("/v2/models/ragged/ready")).isEqualTo(200);
  }

  @Test
  void aStreamingModelIsWarmedThroughTheGenerateExtensionOnEveryProtocolWithoutAFailure() {
    start(WarmupOptions.of(Duration.ofSeconds(2)).withDeployments(List.of("chunks")));
    apply("""
        deployments:
          - name: chunks
            version: "1"
            model:
              uri: builtin:chunks
              engine: Builtin
              streaming: true
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
            pool: {workers_per_node: 1}
            batching: {max_batch_size: 4, max_batch_delay_ms: 0}
        """);

    await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> status("/v2/health/ready") == 200);
    WarmupReport report = ManagedNode.join(node.warmup());

    assertThat(report.models()).singleElement().satisfies(m -> {
      assertThat(m.problem()).as(report.describe()).isNull();
      assertThat(m.answered()).isPositive();
      assertThat(m.failed()).isZero();
    });
    assertThat(report.warmed()).as(report.describe()).isTrue();
    for (Protocol p : Protocol.values()) {
      assertThat(report.answered(p)).as(p.tag()).isPositive();
      assertThat(report.failed().get(p)).as(p.tag()).isZero();
    }
    // The streams reached the model: its pool counts them as its own requests.
    assertThat(poolRequests("chunks")).isGreaterThanOrEqualTo(report.models().get(0).answered());
  }
}
