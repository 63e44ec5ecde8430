package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.OipRequest.Input;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.grpc.common.GrpcStatus;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue #36: scalar inputs and outputs (shape {@code []}, one element) through every form of the protocol: JSON with
 * the element in a one-element array (Triton's form) or bare (KServe's and current Triton's), the binary extension,
 * gRPC typed and raw contents; the model's metadata lists them with shape {@code []}; a scalar sent with a shape
 * of its own is refused naming the field.
 */
class ScalarInferenceTest extends GatewayTestBase {

  private static final String INFER = "/v2/models/" + TestModels.SCALARS + "/infer";

  @BeforeAll
  void addModel() {
    TestModels.scalars().forEach(cluster::addModel);
  }

  private static OipRequest request(long sr, String tag) {
    return OipRequest.fp32("audio", new long[] {1, 4}, 0.5f, -1, 2, 0)
        .input(Input.int64("sr", new long[0], sr)).input(Input.bytes("tag", new long[0], tag));
  }

  private static byte[] int64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }

  private void assertThePoolGotScalars(long sr, String tag) {
    List<Tensor> sent = cluster.last().request().inputs();
    assertThat(sent.get(1)).isEqualTo(new Tensor("sr", DataType.INT64, new long[0], int64(sr)));
    assertThat(sent.get(2).shape()).isEmpty();
    assertThat(sent.get(2).byteElements()).singleElement()
        .satisfies(b -> assertThat(new String(b, StandardCharsets.UTF_8)).isEqualTo(tag));
  }

  private static void assertScalarOutputsInJson(JsonArray outputs, long sr, String tag) {
    assertThat(outputs.getJsonObject(0).getJsonArray("shape")).isEqualTo(new JsonArray().add(1).add(4));
    assertThat(outputs.getJsonObject(0).getJsonArray("data")).isEqualTo(new JsonArray("[1.0,-2.0,4.0,0.0]"));
    JsonObject srOut = outputs.getJsonObject(1);
    assertThat(srOut.getString("name")).isEqualTo("sr_out");
    assertThat(srOut.getJsonArray("shape")).isEmpty();
    assertThat(srOut.getJsonArray("data")).isEqualTo(new JsonArray().add(sr));
    assertThat(outputs.getJsonObject(2).getJsonArray("shape")).isEmpty();
    assertThat(outputs.getJsonObject(2).getJsonArray("data")).isEqualTo(new JsonArray().add(tag));
  }

  @Test
  void jsonTakesAScalarInAOneElementArrayOrBareAndAnswersWithShapeEmpty() {
    HttpResponse<Buffer> r = postJson(INFER, request(16_000, "chunk-1").json());
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(r.bodyAsString()).contains("\"sr_out\"").contains("\"shape\":[]");
    assertScalarOutputsInJson(r.bodyAsJsonObject().getJsonArray("outputs"), 16_000, "chunk-1");
    assertThePoolGotScalars(16_000, "chunk-1");

    String bare = "{\"inputs\":[{\"name\":\"audio\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[0.5,-1,2,0]},"
        + "{\"name\":\"sr\",\"datatype\":\"INT64\",\"shape\":[],\"data\":8000},"
        + "{\"name\":\"tag\",\"datatype\":\"BYTES\",\"shape\":[],\"data\":\"bare\"}]}";
    HttpResponse<Buffer> b = postJson(INFER, bare);
    assertThat(b.statusCode()).as(b.bodyAsString()).isEqualTo(200);
    assertScalarOutputsInJson(b.bodyAsJsonObject().getJsonArray("outputs"), 8_000, "bare");
    assertThePoolGotScalars(8_000, "bare");
  }

  @Test
  void theBinaryExtensionCarriesAScalarsBytesBothWays() {
    OipRequest.Binary request = request(16_000, "bin").parameter("binary_data_output", true).binary();
    HttpResponse<Buffer> r = post(INFER, Buffer.buffer(request.body()),
        Map.of("Inference-Header-Content-Length", request.headerLengthValue()));
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThePoolGotScalars(16_000, "bin");

    int headerLength = Integer.parseInt(r.getHeader("Inference-Header-Content-Length"));
    JsonArray outputs = new JsonObject(r.body().getBuffer(0, headerLength)).getJsonArray("outputs");
    assertThat(outputs.getJsonObject(1).getJsonArray("shape")).isEmpty();
    assertThat(outputs.getJsonObject(1).getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(8);
    assertThat(outputs.getJsonObject(2).getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(4 + 3);
    byte[] tail = r.body().getBytes(headerLength + 16, r.body().length());
    assertThat(java.util.Arrays.copyOfRange(tail, 0, 8)).isEqualTo(int64(16_000));
    assertThat(new String(tail, 12, 3, StandardCharsets.UTF_8)).isEqualTo("bin");
  }

  @Test
  void grpcTypedAndRawContentsCarryAScalarWithAnEmptyShape() {
    GrpcResult<ModelInferResponse> typed = call(GRPCInferenceServiceGrpcClient.ModelInfer,
        request(16_000, "typed").grpc(TestModels.SCALARS));
    assertThat(typed.status()).as(typed.message()).isEqualTo(GrpcStatus.OK);
    assertThePoolGotScalars(16_000, "typed");
    ModelInferResponse t = typed.body();
    assertThat(t.getOutputs(1).getShapeList()).isEmpty();
    assertThat(t.getOutputs(1).getContents().getInt64ContentsList()).containsExactly(16_000L);
    assertThat(t.getOutputs(2).getShapeList()).isEmpty();
    assertThat(t.getOutputs(2).getContents().getBytesContentsList()).containsExactly(ByteString.copyFromUtf8("typed"));

    GrpcResult<ModelInferResponse> raw = call(GRPCInferenceServiceGrpcClient.ModelInfer,
        request(8_000, "raw").grpcRaw(TestModels.SCALARS));
    assertThat(raw.status()).as(raw.message()).isEqualTo(GrpcStatus.OK);
    assertThePoolGotScalars(8_000, "raw");
    assertThat(raw.body().getOutputs(1).getShapeList()).isEmpty();
    assertThat(raw.body().getRawOutputContents(1)).isEqualTo(ByteString.copyFrom(int64(8_000)));
  }

  @Test
  void theMetadataListsAScalarWithShapeEmpty() {
    JsonObject meta = get("/v2/models/" + TestModels.SCALARS).bodyAsJsonObject();
    assertThat(meta.getJsonArray("inputs").getJsonObject(1).getJsonArray("shape")).isEmpty();
    assertThat(meta.getJsonArray("outputs").getJsonObject(2).getJsonArray("shape")).isEmpty();
  }

  @Test
  void aScalarSentWithAShapeOrMoreThanOneElementIsRefusedNamingTheField() {
    String vector = request(16_000, "t").json().replace("\"INT64\",\"shape\":[]", "\"INT64\",\"shape\":[1]");
    assertThat(vector).contains("\"INT64\",\"shape\":[1]");
    HttpResponse<Buffer> r = postJson(INFER, vector);
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.bodyAsJsonObject().getString("error"))
        .isEqualTo("inputs[1].shape: [1] does not match [] of input 'sr' (a scalar: shape [] and one element)");

    HttpResponse<Buffer> two = postJson(INFER, request(16_000, "t").json().replace("\"data\":[16000]",
        "\"data\":[16000,8000]"));
    assertThat(two.statusCode()).isEqualTo(400);
    assertThat(two.bodyAsJsonObject().getString("error")).startsWith("inputs[1].data: more than the 1 elements");

    GrpcResult<ModelInferResponse> g = call(GRPCInferenceServiceGrpcClient.ModelInfer,
        request(16_000, "t").grpc(TestModels.SCALARS).toBuilder().setInputs(1,
            request(16_000, "t").grpc(TestModels.SCALARS).getInputs(1).toBuilder().addShape(1)).build());
    assertThat(g.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(g.message()).startsWith("inputs[1].shape: [1] does not match []");
  }
}
