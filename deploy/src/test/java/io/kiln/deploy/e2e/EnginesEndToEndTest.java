package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The same MLP (the weights of models/mlp) served by each engine users bring: ONNX Runtime
 * ({@code models/mlp-onnx}, its engine detected from the folder) and a Python worker running numpy
 * ({@code deploy/examples/python}). Over HTTP JSON and gRPC raw tensors both give torch's numbers, and the
 * model metadata names the platform.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class EnginesEndToEndTest {

  private static final String YAML = """
      deployments:
        - name: mlp-onnx
          version: "1"
          model:
            uri: models/mlp-onnx
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
            warmup: {batch_sizes: [1, 2]}
            threads: {intra_op: 1, inter_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 1}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
        - name: mlp-python
          version: "1"
          model:
            uri: deploy/examples/python
            engine: Python
            python: {interpreter: %s, config: {weights: mlp.npz}}
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 10]}]
            warmup: {batch_sizes: [1, 2]}
            threads: {intra_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 1}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
      """;

  private final MlpFixture mlp = MlpFixture.load();
  private final Http http = new Http();
  private ServingCluster cluster;
  private OipGrpc grpc;

  @BeforeAll
  void deploy() {
    cluster = ServingCluster.start("node-1");
    cluster.deploy(YAML.formatted(PythonInterpreter.path()));
    cluster.awaitReady("mlp-onnx", 1);
    cluster.awaitReady("mlp-python", 1);
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

  private void assertTorchOutput(float[] actual) {
    mlp.assertOutput(actual);
  }

  @ParameterizedTest
  @ValueSource(strings = {"mlp-onnx", "mlp-python"})
  void jsonAndGrpcAnswerWithTorchsNumbers(String model) {
    int port = cluster.node("node-1").httpPort();
    Http.Response r = http.postJson(port, "/v2/models/" + model + "/infer", mlp.jsonRequest("json-" + model, null));
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    JsonObject out = r.json().getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getJsonArray("shape")).isEqualTo(new JsonArray().add(2).add(10));
    assertTorchOutput(MlpFixture.floats(out.getJsonArray("data")));

    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName(model).setId("grpc-" + model)
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("input").setDatatype("FP32")
            .addShape(2).addShape(64))
        .addRawInputContents(ByteString.copyFrom(Http.littleEndian(mlp.input))).build();
    ModelInferResponse g = ServingCluster.join(grpc.at(cluster.node("node-1").grpcPort()).modelInfer(req)
        .toCompletionStage());
    assertThat(g.getOutputs(0).getShapeList()).containsExactly(2L, 10L);
    byte[] raw = g.getRawOutputContents(0).toByteArray();
    assertTorchOutput(Http.floats(raw, 0, raw.length));
  }

  @ParameterizedTest
  @ValueSource(strings = {"mlp-onnx:onnxruntime_onnx", "mlp-python:python"})
  void metadataNamesThePlatform(String modelAndPlatform) {
    List<String> parts = List.of(modelAndPlatform.split(":"));
    Http.Response meta = http.get(cluster.node("node-1").httpPort(), "/v2/models/" + parts.get(0));
    assertThat(meta.status()).as(meta.text()).isEqualTo(200);
    assertThat(meta.json().getString("platform")).isEqualTo(parts.get(1));
  }
}
