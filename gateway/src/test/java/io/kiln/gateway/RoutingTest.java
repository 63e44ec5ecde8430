package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.grpc.common.GrpcStatus;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Routing through the real server: locality hints pin hard, the local pool is preferred while it has room,
 * a full local pool spills to another node, and no ready pool is a 503.
 */
@Tag("slow")
class RoutingTest extends GatewayTestBase {

  private static final String BODY = OipRequest.fp32("input", new long[] {1, 4}, 1f, 2f, 3f, 4f).json();

  private static String withParameter(String name, String value) {
    return OipRequest.fp32("input", new long[] {1, 4}, 1f, 2f, 3f, 4f).parameter(name, value).json();
  }

  private HttpResponse<Buffer> infer(String body, Map<String, String> headers) {
    return post("/v2/models/mlp/infer", Buffer.buffer(body), headers);
  }

  private String ranOn(HttpResponse<Buffer> r) {
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    String reported = r.bodyAsJsonObject().getJsonObject("parameters").getString("kiln_node");
    assertThat(cluster.last().node()).as("the endpoint the request was sent to").isEqualTo(reported);
    return reported;
  }

  @Test
  void theLocalPoolServesWhileItHasRoom() {
    cluster.node("node-b").queueDepth = 0;
    cluster.node("node-a").queueDepth = 15; // capacity 16: one slot left
    assertThat(ranOn(infer(BODY, Map.of()))).isEqualTo("node-a");
  }

  @Test
  void aNodeHeaderPinsTheRequest() {
    assertThat(ranOn(infer(BODY, Map.of("kiln-node", "node-c")))).isEqualTo("node-c");
    assertThat(ranOn(infer(BODY, Map.of("kiln-node", "node-b")))).isEqualTo("node-b");
  }

  @Test
  void aNodeIdParameterPinsTheRequest() {
    assertThat(ranOn(infer(withParameter("node_id", "node-b"), Map.of()))).isEqualTo("node-b");
    // The header wins over the parameter.
    assertThat(ranOn(infer(withParameter("node_id", "node-b"), Map.of("kiln-node", "node-c")))).isEqualTo("node-c");
  }

  @Test
  void aDataKeyRunsWhereTheDataIs() {
    cluster.mapDataKey("frame-42", "node-c");
    assertThat(ranOn(infer(withParameter("data_key", "frame-42"), Map.of()))).isEqualTo("node-c");
    // An unknown key says nothing about locality: the local pool serves.
    assertThat(ranOn(infer(withParameter("data_key", "unknown"), Map.of()))).isEqualTo("node-a");
  }

  @Test
  void aPinIsHardWhenThatNodeCannotServe() {
    cluster.node("node-b").ready = false;
    HttpResponse<Buffer> r = infer(BODY, Map.of("kiln-node", "node-b"));
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.getHeader("Retry-After")).isEqualTo("2");
    assertThat(r.bodyAsJsonObject().getString("error")).isEqualTo("no ready pool for model 'mlp' on node 'node-b'");

    HttpResponse<Buffer> nowhere = infer(withParameter("node_id", "node-zz"), Map.of());
    assertThat(nowhere.statusCode()).isEqualTo(503);
    assertThat(nowhere.bodyAsJsonObject().getString("error")).contains("node 'node-zz'");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void aFullLocalPoolSpillsToAnotherNode() {
    cluster.node("node-a").queueDepth = 16; // at capacity
    cluster.node("node-b").queueDepth = 12;
    cluster.node("node-c").queueDepth = 1;
    double spillsBefore = routes("spill");
    // Two candidates with room: power-of-two-choices must take the less loaded one, node-c, every time.
    for (int i = 0; i < 5; i++) {
      assertThat(ranOn(infer(BODY, Map.of()))).isEqualTo("node-c");
    }
    assertThat(routes("spill")).isEqualTo(spillsBefore + 5);
    String metrics = get("/metrics").bodyAsString();
    assertThat(metrics).contains("kiln_gateway_routes_total{reason=\"spill\"}");
  }

  @Test
  void noReadyPoolIs503() {
    HttpResponse<Buffer> orphan = post("/v2/models/" + TestModels.ORPHAN + "/infer",
        Buffer.buffer(OipRequest.fp32("x", new long[] {1}, 1f).json()), Map.of());
    assertThat(orphan.statusCode()).isEqualTo(503);
    assertThat(orphan.getHeader("Retry-After")).isEqualTo("2");
    assertThat(orphan.bodyAsJsonObject().getString("error")).isEqualTo("no ready pool for model 'orphan'");

    cluster.node("node-a").ready = false;
    cluster.node("node-b").ready = false;
    cluster.node("node-c").ready = false;
    HttpResponse<Buffer> down = infer(BODY, Map.of());
    assertThat(down.statusCode()).isEqualTo(503);
    assertThat(down.bodyAsJsonObject().getString("error")).isEqualTo("no ready pool for model 'mlp'");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void allPoolsFullIs503WithRetryAfterAndNothingIsSent() {
    cluster.node("node-a").queueDepth = 16;
    cluster.node("node-b").queueDepth = 16;
    cluster.node("node-c").queueDepth = 20;
    HttpResponse<Buffer> r = infer(BODY, Map.of());
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.getHeader("Retry-After")).isEqualTo("2");
    assertThat(r.bodyAsJsonObject().getString("error")).contains("at capacity");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void grpcMetadataAndParametersPinToo() {
    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName("mlp")
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("input").setDatatype("FP32").addShape(1).addShape(4)
            .setContents(InferTensorContents.newBuilder().addFp32Contents(1).addFp32Contents(2).addFp32Contents(3)
                .addFp32Contents(4)))
        .build();
    GrpcResult<ModelInferResponse> byHeader = call(GRPCInferenceServiceGrpcClient.ModelInfer, req, Map.of("kiln-node", "node-b"), 0);
    assertThat(byHeader.status()).isEqualTo(GrpcStatus.OK);
    assertThat(byHeader.body().getParametersMap().get("kiln_node").getStringParam()).isEqualTo("node-b");
    assertThat(cluster.last().node()).isEqualTo("node-b");

    ModelInferRequest byParam = req.toBuilder()
        .putParameters("node_id", InferParameter.newBuilder().setStringParam("node-c").build()).build();
    assertThat(call(GRPCInferenceServiceGrpcClient.ModelInfer, byParam).status()).isEqualTo(GrpcStatus.OK);
    assertThat(cluster.last().node()).isEqualTo("node-c");

    GrpcResult<ModelInferResponse> nowhere = call(GRPCInferenceServiceGrpcClient.ModelInfer, req, Map.of("kiln-node", "node-q"), 0);
    assertThat(nowhere.status()).isEqualTo(GrpcStatus.UNAVAILABLE);
    assertThat(nowhere.message()).contains("node 'node-q'");
  }

  private double routes(String reason) {
    var counter = registry.find("kiln.gateway.routes").tag("reason", reason).counter();
    return counter == null ? 0 : counter.count();
  }
}
