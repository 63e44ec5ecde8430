package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.GatewayOptions;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ServerReadyRequest;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.grpc.client.GrpcClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #27: a node's readiness means "this node serves what it can". Beside a healthy deployment, one whose
 * model does not load (an ONNX folder without model.onnx) goes FAILED: by default the node stays ready (HTTP and
 * gRPC), serves the healthy model, and the failing model's own readiness is 503 naming why; with strict readiness
 * (Triton's rule) the node reads not ready, naming the deployment.
 */
@Tag("slow")
class NodeReadinessTest {

  private static final String HOST = "127.0.0.1";
  private static final Duration WAIT = Duration.ofSeconds(120);

  @TempDir
  Path home;

  private LocalCluster cluster;
  private KilnRuntime runtime;
  private WebClient http;
  private GrpcClient grpcClient;
  private ServingNode node;

  @BeforeEach
  void startRuntime() {
    cluster = LocalCluster.create();
    runtime = ManagedNode.join(cluster.startNode(new NodeOptions("node-a", HOST, Resources.cpu(4), Map.of())));
    http = WebClient.create(cluster.vertx());
    grpcClient = GrpcClient.client(cluster.vertx());
  }

  @AfterEach
  void stop() {
    if (node != null) {
      node.close();
    }
    http.close();
    ManagedNode.join(grpcClient.close().toCompletionStage());
    cluster.close();
  }

  @Test
  void aFailingDeploymentLeavesTheNodeReadyAndServingTheOthers() throws Exception {
    Path broken = start(false);

    assertThat(get("/v2/health/ready").statusCode()).isEqualTo(200);
    assertThat(grpcServerReady()).isTrue();
    assertThat(infer("steady").statusCode()).isEqualTo(200);
    assertThat(get("/v2/models/steady/ready").statusCode()).isEqualTo(200);

    HttpResponse<Buffer> brokenReady = get("/v2/models/broken/ready");
    assertThat(brokenReady.statusCode()).isEqualTo(503);
    JsonObject body = brokenReady.bodyAsJsonObject();
    assertThat(body.getBoolean("ready")).isFalse();
    assertThat(body.getString("error")).contains("model 'broken'", "FAILED", failure("broken"));
    assertThat(failure("broken")).contains(broken.toString());
    HttpResponse<Buffer> refused = infer("broken");
    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.bodyAsString()).contains("FAILED");
  }

  @Test
  void strictReadinessKeepsTheNodeNotReadyNamingTheDeployment() throws Exception {
    start(true);

    HttpResponse<Buffer> ready = get("/v2/health/ready");
    assertThat(ready.statusCode()).isEqualTo(503);
    assertThat(ready.bodyAsJsonObject().getString("error"))
        .startsWith("server not ready: model 'broken' version '1' is not ready").contains("FAILED");
    assertThat(grpcServerReady()).isFalse();
    // Not ready for a load balancer, but it still answers what is sent to it.
    assertThat(infer("steady").statusCode()).isEqualTo(200);
  }

  /** Starts the node, deploys the healthy and the failing model, waits for both to settle; the broken folder. */
  private Path start(boolean strict) throws Exception {
    GatewayOptions options = GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0).bindJvmMetrics(false)
        .strictReadiness(strict).build();
    node = ManagedNode.join(ServingNode.start(runtime, options, null, home, null, WarmupOptions.OFF));
    Path broken = Files.createDirectories(home.resolve("no-model"));
    ManagedNode.join(node.serve().apply("""
        deployments:
          - name: steady
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
              outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          - name: broken
            version: "1"
            model:
              uri: %s
              engine: OnnxRuntime
              inputs:  [{name: input, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, max_restarts: 0}
        """.formatted(broken), home.resolve("two.yaml"), false));
    await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> phase("broken") == DeploymentStatus.Phase.FAILED
        && phase("steady") == DeploymentStatus.Phase.READY);
    await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> infer("steady").statusCode() == 200);
    return broken;
  }

  private DeploymentStatus.Phase phase(String name) {
    DeploymentStatus s = node.serve().statuses().get(name);
    return s == null ? null : s.phase();
  }

  private String failure(String name) {
    return node.serve().statuses().get(name).failure();
  }

  private HttpResponse<Buffer> get(String path) {
    return ManagedNode.join(http.get(node.httpPort(), HOST, path).send().toCompletionStage());
  }

  private HttpResponse<Buffer> infer(String model) {
    return ManagedNode.join(http.post(node.httpPort(), HOST, "/v2/models/" + model + "/infer")
        .putHeader("Content-Type", "application/json")
        .sendBuffer(Buffer.buffer(OipRequest.fp32("x", new long[] {1, 2}, 1f, 2f).json()))
        .toCompletionStage());
  }

  private boolean grpcServerReady() {
    return ManagedNode.join(GRPCInferenceServiceGrpcClient.create(grpcClient,
            SocketAddress.inetSocketAddress(node.grpcPort(), HOST))
        .serverReady(ServerReadyRequest.getDefaultInstance()).toCompletionStage()).getReady();
  }
}
