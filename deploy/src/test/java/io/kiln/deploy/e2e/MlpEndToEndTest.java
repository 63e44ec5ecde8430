package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelMetadataRequest;
import io.kiln.protocol.grpc.ModelMetadataResponse;
import io.kiln.protocol.grpc.ModelReadyRequest;
import io.kiln.deploy.node.ServingNode;
import io.kiln.pools.PoolStats;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The repository's TorchScript MLP deployed on three real nodes (one warm DJL worker each): every protocol
 * returns torch's numbers from {@code models/mlp/expected.json}, through every node's gateway; metadata and
 * readiness reflect the deployment; locality hints run a request on the node they name; {@code /metrics}
 * carries the gateway's and the pools' meters.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class MlpEndToEndTest {

  private static final String YAML = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: models/mlp
            engine: PyTorch
            format: torchscript
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
            warmup: {batch_sizes: [1, 2]}
            threads: {intra_op: 1, inter_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 1}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
      """;

  private final MlpFixture mlp = MlpFixture.load();
  private final Http http = new Http();
  private ServingCluster cluster;
  private OipGrpc grpc;

  @BeforeAll
  void deploy() {
    cluster = ServingCluster.start("node-1", "node-2", "node-3");
    cluster.deploy(YAML);
    cluster.awaitReady("mlp", 3);
    grpc = new OipGrpc();
  }

  @AfterAll
  void stop() {
    if (grpc != null) {
      grpc.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private ServingNode node(String id) {
    return cluster.node(id);
  }

  private void assertTorchOutput(float[] actual) {
    mlp.assertOutput(actual);
  }

  private void assertTorchResponse(JsonObject body, String ranOn) {
    assertThat(body.getString("model_name")).isEqualTo("mlp");
    assertThat(body.getString("model_version")).isEqualTo("1");
    assertThat(body.getJsonObject("parameters").getString("kiln_node")).isEqualTo(ranOn);
    JsonObject out = body.getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getString("name")).isEqualTo("output");
    assertThat(out.getString("datatype")).isEqualTo("FP32");
    assertThat(out.getJsonArray("shape")).isEqualTo(new JsonArray().add(2).add(10));
    assertTorchOutput(MlpFixture.floats(out.getJsonArray("data")));
  }

  @Test
  void jsonInferenceThroughEveryGatewayRunsLocallyAndMatchesTorch() {
    for (String id : cluster.nodeIds()) {
      PoolStats before = cluster.stats("mlp", "1", id);
      Http.Response r = http.postJson(node(id).httpPort(), "/v2/models/mlp/infer", mlp.jsonRequest("json-" + id, null));
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      assertThat(r.json().getString("id")).isEqualTo("json-" + id);
      assertTorchResponse(r.json(), id);
      assertThat(cluster.stats("mlp", "1", id).completed()).isEqualTo(before.completed() + 1);
    }
  }

  @Test
  void binaryTensorRequestAndResponseMatchTorch() {
    OipRequest.Binary request = mlp.request("bin").parameter("binary_data_output", true).binary();

    Http.Response r = http.post(node("node-2").httpPort(), "/v2/models/mlp/infer", "application/octet-stream",
        request.body(), "Inference-Header-Content-Length", request.headerLengthValue());

    assertThat(r.status()).as(r.text()).isEqualTo(200);
    assertThat(r.header("Content-Type")).isEqualTo("application/octet-stream");
    int headerLength = Integer.parseInt(r.header("Inference-Header-Content-Length"));
    JsonObject json = new JsonObject(new String(r.body(), 0, headerLength, StandardCharsets.UTF_8));
    assertThat(json.getJsonObject("parameters").getString("kiln_node")).isEqualTo("node-2");
    JsonObject out = json.getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getJsonArray("shape")).isEqualTo(new JsonArray().add(2).add(10));
    assertThat(out.getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(2 * 10 * 4);
    assertTorchOutput(Http.floats(r.body(), headerLength, r.body().length - headerLength));
  }

  @Test
  void grpcModelInferWithRawContentsMatchesTorch() {
    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName("mlp").setId("grpc-raw")
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("input").setDatatype("FP32")
            .addShape(2).addShape(64))
        .addRawInputContents(ByteString.copyFrom(Http.littleEndian(mlp.input))).build();

    ModelInferResponse r = ServingCluster.join(grpc("node-3").modelInfer(req).toCompletionStage());

    assertThat(r.getModelName()).isEqualTo("mlp");
    assertThat(r.getModelVersion()).isEqualTo("1");
    assertThat(r.getId()).isEqualTo("grpc-raw");
    assertThat(r.getParametersMap().get("kiln_node").getStringParam()).isEqualTo("node-3");
    assertThat(r.getOutputs(0).getName()).isEqualTo("output");
    assertThat(r.getOutputs(0).getShapeList()).containsExactly(2L, 10L);
    byte[] raw = r.getRawOutputContents(0).toByteArray();
    assertTorchOutput(Http.floats(raw, 0, raw.length));
  }

  @Test
  void metadataAndReadinessReflectTheDeployment() {
    for (String id : cluster.nodeIds()) {
      int port = node(id).httpPort();
      Http.Response meta = http.get(port, "/v2/models/mlp");
      assertThat(meta.status()).as(meta.text()).isEqualTo(200);
      JsonObject m = meta.json();
      assertThat(m.getString("name")).isEqualTo("mlp");
      assertThat(m.getJsonArray("versions")).isEqualTo(new JsonArray().add("1"));
      assertThat(m.getString("platform")).isEqualTo("pytorch_torchscript");
      assertThat(m.getJsonArray("inputs").getJsonObject(0)).isEqualTo(new JsonObject()
          .put("name", "input").put("datatype", "FP32").put("shape", new JsonArray().add(-1).add(64)));
      assertThat(m.getJsonArray("outputs").getJsonObject(0)).isEqualTo(new JsonObject()
          .put("name", "output").put("datatype", "FP32").put("shape", new JsonArray().add(-1).add(10)));

      assertThat(http.get(port, "/v2/models/mlp/ready").status()).isEqualTo(200);
      assertThat(http.get(port, "/v2/models/mlp/versions/1/ready").json().getBoolean("ready")).isTrue();
      assertThat(http.get(port, "/v2/health/ready").status()).isEqualTo(200);
      assertThat(http.get(port, "/v2/models/mlp/versions/2").status()).isEqualTo(404);
      assertThat(http.get(port, "/v2/models/resnet").status()).isEqualTo(404);
    }
    ModelMetadataResponse g = ServingCluster.join(grpc("node-2")
        .modelMetadata(ModelMetadataRequest.newBuilder().setName("mlp").build()).toCompletionStage());
    assertThat(g.getVersionsList()).containsExactly("1");
    assertThat(g.getInputs(0).getShapeList()).containsExactly(-1L, 64L);
    assertThat(ServingCluster.join(grpc("node-1").modelReady(ModelReadyRequest.newBuilder().setName("mlp").build())
        .toCompletionStage()).getReady()).isTrue();
  }

  @Test
  void aLocalityHintRunsTheRequestOnTheNodeItNames() {
    int entry = node("node-1").httpPort();
    double pinnedBefore = routes("node-1", "pinned");

    Http.Response byHeader = http.postJson(entry, "/v2/models/mlp/infer", mlp.jsonRequest("pin-h", null),
        "kiln-node", "node-3");
    Http.Response byParameter = http.postJson(entry, "/v2/models/mlp/infer",
        mlp.jsonRequest("pin-p", new JsonObject().put("node_id", "node-2")));

    assertThat(byHeader.status()).as(byHeader.text()).isEqualTo(200);
    assertTorchResponse(byHeader.json(), "node-3");
    assertThat(byParameter.status()).as(byParameter.text()).isEqualTo(200);
    assertTorchResponse(byParameter.json(), "node-2");
    assertThat(routes("node-1", "pinned")).isEqualTo(Math.max(0, pinnedBefore) + 2);
  }

  @Test
  void metricsShowTheGatewaysAndThePoolsMeters() {
    List<Integer> codes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      codes.add(http.postJson(node("node-1").httpPort(), "/v2/models/mlp/infer", mlp.jsonRequest("m-" + i, null))
          .status());
    }
    assertThat(codes).containsOnly(200);

    Http.Response r = http.get(node("node-1").httpPort(), "/metrics");
    assertThat(r.status()).isEqualTo(200);
    String text = r.text();
    assertThat(PromText.parse(text).sum("kiln_gateway_requests_total",
        Map.of("model", "mlp", "outcome", "ok", "code", "200", "protocol", "http"))).isGreaterThanOrEqualTo(3);
    assertThat(PromText.parse(text).sum("kiln_gateway_routes_total", Map.of("reason", "local"))).isGreaterThanOrEqualTo(3);
    assertThat(PromText.parse(text).sum("kiln_gateway_request_duration_seconds_count", Map.of("model", "mlp")))
        .isGreaterThanOrEqualTo(3);
    assertThat(PromText.parse(text).sum("kiln_pool_requests_total",
        Map.of("deployment", "mlp", "version", "1", "node", "node-1", "outcome", "ok"))).isGreaterThanOrEqualTo(3);
    assertThat(PromText.parse(text).sum("kiln_pool_batch_size_rows_count", Map.of("deployment", "mlp", "node", "node-1")))
        .isGreaterThanOrEqualTo(1);
    assertThat(PromText.parse(text).sum("kiln_pool_worker_loads_total", Map.of("deployment", "mlp", "node", "node-1")))
        .isEqualTo(1);
    assertThat(PromText.parse(text).sum("kiln_pool_queue_depth", Map.of("deployment", "mlp", "node", "node-1"))).isZero();
    // A node's registry holds its own pools only.
    assertThat(PromText.parse(text).sum("kiln_pool_requests_total", Map.of("node", "node-2"))).isEqualTo(-1);
    assertThat(text).contains("jvm_memory_used_bytes");
  }

  private double routes(String node, String reason) {
    return PromText.parse(http.get(node(node).httpPort(), "/metrics").text()).sum("kiln_gateway_routes_total",
        Map.of("reason", reason));
  }

  private GRPCInferenceServiceGrpcClient grpc(String node) {
    return grpc.at(node(node).grpcPort());
  }
}
