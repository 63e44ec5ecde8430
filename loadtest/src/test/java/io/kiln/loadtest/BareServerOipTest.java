package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.loadtest.impl.BareOipCodec;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** BareServer {@code --work oip}: a real server on a free port, asked by a real Vert.x HTTP client. */
class BareServerOipTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static BareServer server;
  private static Vertx vertx;
  private static HttpClient client;

  record Answer(int status, MultiMap headers, Buffer body) {
    JsonNode json() throws Exception {
      return JSON.readTree(body.getBytes());
    }
  }

  @BeforeAll
  static void start() {
    server = BareServer.start(BareServer.Options.defaults().withWork(BareServer.Work.OIP));
    vertx = Vertx.vertx();
    client = vertx.createHttpClient();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static Answer post(String path, byte[] body, Map<String, String> headers) throws Exception {
    return VertxCalls.await(vertx, () -> client.request(HttpMethod.POST, server.port(), "127.0.0.1", path)
        .compose(req -> {
          headers.forEach(req::putHeader);
          return req.send(Buffer.buffer(body));
        })
        .compose(resp -> resp.body().map(b -> new Answer(resp.statusCode(), resp.headers(), b))));
  }

  private static Answer postJson(String json) throws Exception {
    return post("/v2/models/noop/infer", json.getBytes(StandardCharsets.UTF_8), Map.of("content-type", "application/json"));
  }

  private static float[] floats(JsonNode array) {
    float[] f = new float[array.size()];
    for (int i = 0; i < f.length; i++) {
      f[i] = (float) array.get(i).asDouble();
    }
    return f;
  }

  private static float[] firstValues(RequestTemplate t, int n) {
    float[] all = new float[t.inputs().get(0).byteSize() / 4];
    t.inputs().get(0).raw().asFloatBuffer().get(all);
    return Arrays.copyOf(all, n);
  }

  /** A binary-extension body: the JSON header, then every tensor's bytes. */
  private static byte[] binaryBody(String header, float... values) {
    byte[] json = header.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(json.length + values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.put(json);
    for (float v : values) {
      b.putFloat(v);
    }
    return b.array();
  }

  @Test
  void answersAJsonRequestWithTheFirstTenInputValues() throws Exception {
    RequestTemplate request = RequestTemplate.generatedFp32("input", new long[] {1, 64}, 7);

    Answer a = post("/v2/models/noop/infer", request.json(), Map.of("content-type", "application/json"));

    assertThat(a.status()).as(a.body().toString()).isEqualTo(200);
    assertThat(a.headers().get("content-type")).isEqualTo("application/json");
    JsonNode out = a.json().get("outputs").get(0);
    assertThat(a.json().get("model_name").asText()).isEqualTo("noop");
    assertThat(out.get("name").asText()).isEqualTo("output");
    assertThat(out.get("datatype").asText()).isEqualTo("FP32");
    assertThat(out.get("shape").toString()).isEqualTo("[1,10]");
    assertThat(floats(out.get("data"))).containsExactly(firstValues(request, 10));
    assertThat(server.requestsReceived()).isPositive();
  }

  @Test
  void modelEchoAnswersTheWholeFirstInputAsIdentityDoes() throws Exception {
    RequestTemplate request = RequestTemplate.generatedFp32("input", new long[] {1, 64}, 7);

    Answer a = post("/v2/models/" + BareOipCodec.ECHO + "/infer", request.json(),
        Map.of("content-type", "application/json"));

    assertThat(a.status()).as(a.body().toString()).isEqualTo(200);
    JsonNode out = a.json().get("outputs").get(0);
    assertThat(out.get("shape").toString()).isEqualTo("[1,64]");
    assertThat(floats(out.get("data"))).containsExactly(firstValues(request, 64));

    String header = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,2],"
        + "\"parameters\":{\"binary_data_size\":16}}],\"parameters\":{\"binary_data_output\":true}}";
    Answer b = post("/v2/models/" + BareOipCodec.ECHO + "/infer", binaryBody(header, 1, 2, 3, 4),
        Map.of("Inference-Header-Content-Length", Integer.toString(header.getBytes(StandardCharsets.UTF_8).length)));
    assertThat(b.status()).as(b.body().toString()).isEqualTo(200);
    int jsonLength = Integer.parseInt(b.headers().get("Inference-Header-Content-Length"));
    JsonNode json = JSON.readTree(b.body().getBytes(0, jsonLength));
    assertThat(json.get("outputs").get(0).get("shape").toString()).isEqualTo("[2,2]");
    assertThat(json.get("outputs").get(0).get("parameters").get("binary_data_size").asInt()).isEqualTo(16);
    float[] got = new float[4];
    ByteBuffer.wrap(b.body().getBytes(jsonLength, b.body().length())).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
        .get(got);
    assertThat(b.body().length() - jsonLength).isEqualTo(16);
    assertThat(got).containsExactly(1, 2, 3, 4);
  }

  @Test
  void nestedDataIsFlattenedAndShortInputsArePaddedWithZeros() throws Exception {
    Answer a = postJson("{\"id\":\"r1\",\"inputs\":[{\"data\":[[1,2,3],[4,5,6]],\"name\":\"x\",\"datatype\":\"FP32\","
        + "\"shape\":[2,3]}]}");

    assertThat(a.status()).as(a.body().toString()).isEqualTo(200);
    assertThat(a.json().get("id").asText()).isEqualTo("r1");
    assertThat(floats(a.json().get("outputs").get(0).get("data"))).containsExactly(1, 2, 3, 4, 5, 6, 0, 0, 0, 0);
  }

  @Test
  void binaryRequestAskingForBinaryOutputGetsRawFloatsAfterTheJsonHeader() throws Exception {
    float[] values = new float[16];
    for (int i = 0; i < values.length; i++) {
      values[i] = i * 0.25f - 1;
    }
    String header = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,16],"
        + "\"parameters\":{\"binary_data_size\":64}}],\"parameters\":{\"binary_data_output\":true}}";
    int headerLength = header.getBytes(StandardCharsets.UTF_8).length;

    Answer a = post("/v2/models/mlp/infer", binaryBody(header, values),
        Map.of("Inference-Header-Content-Length", Integer.toString(headerLength)));

    assertThat(a.status()).as(a.body().toString()).isEqualTo(200);
    assertThat(a.headers().get("content-type")).isEqualTo("application/octet-stream");
    int jsonLength = Integer.parseInt(a.headers().get("Inference-Header-Content-Length"));
    JsonNode json = JSON.readTree(a.body().getBytes(0, jsonLength));
    assertThat(json.get("model_name").asText()).isEqualTo("mlp");
    JsonNode out = json.get("outputs").get(0);
    assertThat(out.has("data")).isFalse();
    assertThat(out.get("parameters").get("binary_data_size").asInt()).isEqualTo(40);
    assertThat(a.body().length() - jsonLength).isEqualTo(40);
    float[] got = new float[10];
    ByteBuffer.wrap(a.body().getBytes(jsonLength, a.body().length())).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(got);
    assertThat(got).containsExactly(Arrays.copyOf(values, 10));
  }

  @Test
  void binaryRequestWithoutBinaryOutputGetsJsonData() throws Exception {
    String header = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2],"
        + "\"parameters\":{\"binary_data_size\":8}}]}";

    Answer a = post("/v2/models/noop/infer", binaryBody(header, 1.5f, -2f),
        Map.of("Inference-Header-Content-Length", Integer.toString(header.length())));

    assertThat(a.status()).as(a.body().toString()).isEqualTo(200);
    assertThat(floats(a.json().get("outputs").get(0).get("data"))).containsExactly(1.5f, -2f, 0, 0, 0, 0, 0, 0, 0, 0);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', textBlock = """
      {"inputs": [                                                                            | malformed JSON
      []                                                                                      | must be a JSON object
      {"inputs": []}                                                                          | inputs: missing or empty
      {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3]}]}     | inputs[0].data: has 3 elements but shape [1, 4] needs 4
      {"inputs": [{"name": "x", "datatype": "INT32", "shape": [1], "data": [1]}]}            | inputs[0].datatype: INT32 is not FP32
      {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": ["a"]}]}           | inputs[0].data element 0: expected a number
      {"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]}                           | inputs[0].shape: missing
      {"inputs": [{"datatype": "FP32", "shape": [1], "data": [1]}]}                          | inputs[0].name: missing
      {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1]}]}                          | inputs[0].data: missing
      """)
  void malformedJsonRequestsGet400NamingTheProblem(String body, String message) throws Exception {
    Answer a = postJson(body);

    assertThat(a.status()).isEqualTo(400);
    assertThat(a.json().get("error").asText()).contains(message);
  }

  @Test
  void binaryRequestsWhoseSizesDisagreeGet400() throws Exception {
    String header = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2],"
        + "\"parameters\":{\"binary_data_size\":8}}]}";
    String len = Integer.toString(header.length());

    Answer missingBytes = post("/", binaryBody(header, 1f), Map.of("Inference-Header-Content-Length", len));
    Answer extraBytes = post("/", binaryBody(header, 1f, 2f, 3f), Map.of("Inference-Header-Content-Length", len));
    Answer badLength = post("/", binaryBody(header, 1f, 2f), Map.of("Inference-Header-Content-Length", "9999"));
    Answer wrongSize = post("/", binaryBody(header.replace("8}", "12}"), 1f, 2f, 3f),
        Map.of("Inference-Header-Content-Length", Integer.toString(header.length() + 1)));

    assertThat(missingBytes.status()).isEqualTo(400);
    assertThat(missingBytes.json().get("error").asText()).contains("only 4 bytes of binary data remain");
    assertThat(extraBytes.status()).isEqualTo(400);
    assertThat(extraBytes.json().get("error").asText()).contains("12 bytes follow the JSON header").contains("add up to 8");
    assertThat(badLength.status()).isEqualTo(400);
    assertThat(badLength.json().get("error").asText()).contains("Inference-Header-Content-Length: 9999 is outside");
    assertThat(wrongSize.status()).isEqualTo(400);
    assertThat(wrongSize.json().get("error").asText()).contains("12 bytes, but FP32 shape [1, 2] needs 8");
  }

  @Test
  void getAnswersAnEmptyObjectForReadinessProbes() throws Exception {
    Answer a = VertxCalls.await(vertx, () -> client.request(HttpMethod.GET, server.port(), "127.0.0.1", "/")
        .compose(req -> req.send())
        .compose(resp -> resp.body().map(b -> new Answer(resp.statusCode(), resp.headers(), b))));

    assertThat(a.status()).isEqualTo(200);
    assertThat(a.body().toString()).isEqualTo("{}");
  }
}
