package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.FakeCluster.Sent;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/** OIP inference over HTTP: JSON (flat and nested, every datatype) and the binary tensor extension. */
class HttpInferenceTest extends GatewayTestBase {

  private static final String MLP_INPUT = "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],";

  private static float[] floats(Buffer b) {
    float[] out = new float[b.length() / 4];
    ByteBuffer.wrap(b.getBytes()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
    return out;
  }

  @Test
  void flatJsonIsDoubledAndTheResponseCarriesIdParametersAndNode() {
    HttpResponse<Buffer> r = postJson("/v2/models/mlp/infer", OipRequest.fp32("input", new long[] {2, 4},
        1, 2, 3, 4, 5, 6, 7, 8.5f).id("req-7").parameter("trace", "abc").parameter("n", 3).json());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/json");
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.getString("id")).isEqualTo("req-7");
    assertThat(body.getString("model_name")).isEqualTo("mlp");
    assertThat(body.getString("model_version")).isEqualTo("2");
    assertThat(body.getJsonObject("parameters").getString("kiln_node")).isEqualTo("node-a");
    JsonObject out = body.getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getString("name")).isEqualTo("output");
    assertThat(out.getString("datatype")).isEqualTo("FP32");
    assertThat(out.getJsonArray("shape")).isEqualTo(new JsonArray().add(2).add(4));
    assertThat(out.getJsonArray("data")).isEqualTo(new JsonArray("[2.0,4.0,6.0,8.0,10.0,12.0,14.0,17.0]"));

    Sent sent = cluster.last();
    assertThat(sent.node()).isEqualTo("node-a");
    assertThat(sent.request().id()).isEqualTo("req-7");
    assertThat(sent.request().parameters()).containsEntry("trace", "abc").containsEntry("n", 3L);
    assertThat(sent.request().inputs().get(0))
        .isEqualTo(Tensor.ofFloats("input", new long[] {2, 4}, new float[] {1, 2, 3, 4, 5, 6, 7, 8.5f}));
  }

  @Test
  void nestedJsonDataIsAccepted() {
    HttpResponse<Buffer> r = postJson("/v2/models/mlp/versions/1/infer",
        "{\"inputs\":[" + MLP_INPUT + "\"data\":[[1,2,3,4],[5,6,7,8]]}]}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.bodyAsJsonObject().getString("model_version")).isEqualTo("1");
    assertThat(cluster.last().version()).isEqualTo("1");
    assertThat(r.bodyAsJsonObject().getJsonArray("outputs").getJsonObject(0).getJsonArray("data"))
        .isEqualTo(new JsonArray("[2.0,4.0,6.0,8.0,10.0,12.0,14.0,16.0]"));
  }

  static Stream<Arguments> everyDatatype() {
    return Stream.of(
        Arguments.of(DataType.BOOL, "[true,false,true]", "[true,false,true]"),
        Arguments.of(DataType.UINT8, "[0,1,255]", "[0,1,255]"),
        Arguments.of(DataType.UINT16, "[0,65535]", "[0,65535]"),
        Arguments.of(DataType.UINT32, "[0,4294967295]", "[0,4294967295]"),
        Arguments.of(DataType.UINT64, "[0,9223372036854775807,18446744073709551615]",
            "[0,9223372036854775807,18446744073709551615]"),
        Arguments.of(DataType.INT8, "[-128,0,127]", "[-128,0,127]"),
        Arguments.of(DataType.INT16, "[-32768,32767]", "[-32768,32767]"),
        Arguments.of(DataType.INT32, "[-2147483648,2147483647]", "[-2147483648,2147483647]"),
        Arguments.of(DataType.INT64, "[-9223372036854775808,9223372036854775807]",
            "[-9223372036854775808,9223372036854775807]"),
        Arguments.of(DataType.FP16, "[1.5,-2,65504,0.000061035156]", "[1.5,-2.0,65504.0,6.1035156E-5]"),
        // 3.0e38 is not a BF16 value: it rounds to the nearest, 1.765625 * 2^127.
        Arguments.of(DataType.BF16, "[1,-2.5,3.0e38]", "[1.0,-2.5,3.0040553E38]"),
        Arguments.of(DataType.FP32, "[0.25,-1.5,3]", "[0.5,-3.0,6.0]"),
        Arguments.of(DataType.FP64, "[1e300,-0.1]", "[1.0E300,-0.1]"),
        Arguments.of(DataType.BYTES, "[\"hello\",\"w\u00f6rld\",\"\"]", "[\"hello\",\"w\u00f6rld\",\"\"]"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("everyDatatype")
  void everyDatatypeRoundTripsThroughJson(DataType type, String data, String expected) {
    int n = new JsonArray(data).size();
    String body = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"" + type + "\",\"shape\":[" + n + "],\"data\":" + data + "}]}";
    HttpResponse<Buffer> r = postJson("/v2/models/" + TestModels.identity(type) + "/infer", body);
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    JsonObject out = r.bodyAsJsonObject().getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getString("datatype")).isEqualTo(type.name());
    // Compare as text so unsigned 64-bit values are not squeezed through a long or a double.
    assertThat(compact(r.bodyAsString())).contains("\"data\":" + compact(expected));
  }

  private static String compact(String json) {
    return json.replace(" ", "");
  }

  @Test
  void binaryRequestAndBinaryResponse() {
    OipRequest.Binary request = OipRequest.fp32("input", new long[] {2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)
        .parameter("binary_data_output", true).binary();
    HttpResponse<Buffer> r = post("/v2/models/mlp/infer", Buffer.buffer(request.body()),
        Map.of("Inference-Header-Content-Length", request.headerLengthValue()));
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/octet-stream");
    int headerLength = Integer.parseInt(r.getHeader("Inference-Header-Content-Length"));
    JsonObject header = new JsonObject(r.body().getBuffer(0, headerLength));
    JsonObject out = header.getJsonArray("outputs").getJsonObject(0);
    assertThat(out.containsKey("data")).isFalse();
    assertThat(out.getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(32);
    assertThat(header.getJsonObject("parameters").getString("kiln_node")).isEqualTo("node-a");
    assertThat(floats(r.body().getBuffer(headerLength, r.body().length())))
        .containsExactly(2, 4, 6, 8, 10, 12, 14, 16);
  }

  @Test
  void binaryRequestWithJsonResponse() {
    OipRequest.Binary request = OipRequest.fp32("input", new long[] {1, 4}, -1, 0, 1, 2).binary();
    HttpResponse<Buffer> r = post("/v2/models/mlp/infer", Buffer.buffer(request.body()),
        Map.of("Inference-Header-Content-Length", request.headerLengthValue()));
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Inference-Header-Content-Length")).isNull();
    assertThat(r.bodyAsJsonObject().getJsonArray("outputs").getJsonObject(0).getJsonArray("data"))
        .isEqualTo(new JsonArray("[-2.0,0.0,2.0,4.0]"));
  }

  @Test
  void mixedInputsAndPerOutputBinarySelection() {
    // Input a as JSON, input b (BYTES) as binary; output b_out binary, a_out JSON.
    byte[] hi = "hi".getBytes(StandardCharsets.UTF_8);
    Buffer bBytes = Buffer.buffer().appendIntLE(hi.length).appendBytes(hi).appendIntLE(0);
    String json = "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT32\",\"shape\":[1,2],\"data\":[[7,-7]]},"
        + "{\"name\":\"b\",\"datatype\":\"BYTES\",\"shape\":[2],\"parameters\":{\"binary_data_size\":" + bBytes.length() + "}}],"
        + "\"outputs\":[{\"name\":\"a_out\",\"parameters\":{\"binary_data\":false}},{\"name\":\"b_out\",\"parameters\":{\"binary_data\":true}}]}";
    HttpResponse<Buffer> r = post("/v2/models/pair/infer", Buffer.buffer(json).appendBuffer(bBytes),
        Map.of("Inference-Header-Content-Length", Integer.toString(json.length())));
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    int headerLength = Integer.parseInt(r.getHeader("Inference-Header-Content-Length"));
    JsonObject header = new JsonObject(r.body().getBuffer(0, headerLength));
    JsonArray outputs = header.getJsonArray("outputs");
    assertThat(outputs.getJsonObject(0).getJsonArray("data")).isEqualTo(new JsonArray("[7,-7]"));
    assertThat(outputs.getJsonObject(1).getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(bBytes.length());
    assertThat(r.body().getBuffer(headerLength, r.body().length())).isEqualTo(bBytes);
    assertThat(cluster.last().request().outputs()).containsExactly("a_out", "b_out");
  }

  @Test
  void onlyTheRequestedOutputsAreReturned() {
    String json = OipRequest.create().input(OipRequest.Input.int32("a", new long[] {1, 2}, 1, 2))
        .input(OipRequest.Input.bytes("b", new long[] {1}, "x")).outputs("b_out").json();
    HttpResponse<Buffer> r = postJson("/v2/models/pair/infer", json);
    assertThat(r.statusCode()).isEqualTo(200);
    JsonArray outputs = r.bodyAsJsonObject().getJsonArray("outputs");
    assertThat(outputs).hasSize(1);
    assertThat(outputs.getJsonObject(0).getString("name")).isEqualTo("b_out");
    assertThat(outputs.getJsonObject(0).getJsonArray("data")).isEqualTo(new JsonArray("[\"x\"]"));
  }

  @Test
  void aLargeBodyIsDecodedOffTheEventLoopAndStillCorrect() {
    // 48k FP32 elements as JSON is well over the offload threshold (256 KiB).
    int rows = 12_000;
    float[] data = new float[rows * 4];
    for (int i = 0; i < data.length; i++) {
      data[i] = i % 1000 + 0.25f;
    }
    String json = OipRequest.fp32("x", new long[] {data.length}, data).json();
    assertThat(json.length()).isGreaterThan(256 * 1024);
    HttpResponse<Buffer> r = postJson("/v2/models/" + TestModels.identity(DataType.FP32) + "/infer", json);
    assertThat(r.statusCode()).isEqualTo(200);
    JsonArray out = r.bodyAsJsonObject().getJsonArray("outputs").getJsonObject(0).getJsonArray("data");
    assertThat(out).hasSize(rows * 4);
    assertThat(out.getDouble(rows * 4 - 1)).isEqualTo(2 * ((rows * 4 - 1) % 1000 + 0.25));
  }
}
