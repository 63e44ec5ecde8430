package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelStreamInferResponse;
import io.kiln.testkit.OipRequest;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * BYTES (text) end to end through an assembled node: the Python model of {@code deploy/examples/text} (Upper:
 * upper-cases each string and returns its length; Words: streams the words) and the ONNX string model
 * {@code models/text-onnx}, over HTTP JSON (flat and nested), HTTP binary, gRPC typed and raw, generate,
 * generate_stream and gRPC ModelStreamInfer, and concurrent requests of uneven strings batched together.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class TextEndToEndTest {

  static final String YAML = """
      deployments:
        - name: upper
          version: "1"
          model:
            uri: deploy/examples/text
            engine: Python
            python: {class: Upper, interpreter: %1$s}
            inputs:  [{name: text, datatype: BYTES, shape: [-1, -1]}]
            outputs:
              - {name: upper,  datatype: BYTES, shape: [-1, -1]}
              - {name: length, datatype: INT32, shape: [-1, -1]}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 16, max_batch_delay_ms: 50}
        - name: words
          version: "1"
          model:
            uri: deploy/examples/text
            engine: Python
            streaming: true
            python: {class: Words, interpreter: %1$s}
            inputs:  [{name: text, datatype: BYTES, shape: [-1]}]
            outputs: [{name: word, datatype: BYTES, shape: [-1]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 1}
        - name: text-onnx
          version: "1"
          model:
            uri: models/text-onnx
            inputs:  [{name: text, datatype: BYTES, shape: [-1]}]
            outputs:
              - {name: exclaimed, datatype: BYTES, shape: [-1]}
              - {name: same,      datatype: BYTES, shape: [-1]}
            threads: {intra_op: 1, inter_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
      """;

  private final Http http = new Http();
  private ServingCluster cluster;
  private OipGrpc grpc;
  private int port;
  private int grpcPort;

  @BeforeAll
  void start() {
    cluster = ServingCluster.start("node-1");
    cluster.deploy(YAML.formatted(PythonInterpreter.path()));
    cluster.awaitReady("upper", 1);
    cluster.awaitReady("words", 1);
    cluster.awaitReady("text-onnx", 1);
    port = cluster.node("node-1").httpPort();
    grpcPort = cluster.node("node-1").grpcPort();
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

  static List<Object> list(JsonArray a) {
    return a.getList();
  }

  @Test
  void httpJsonFlatAndNestedGiveUpperCaseAndLengths() {
    for (String data : List.of("[\"hello\",\"W\u00f6rld\",\"\",\"a b\"]", "[[\"hello\",\"W\u00f6rld\"],[\"\",\"a b\"]]")) {
      Http.Response r = http.postJson(port, "/v2/models/upper/infer",
          "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2,2],\"data\":" + data + "}]}");
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      JsonArray outputs = r.json().getJsonArray("outputs");
      JsonObject upper = outputs.getJsonObject(0);
      assertThat(upper.getString("name")).isEqualTo("upper");
      assertThat(upper.getString("datatype")).isEqualTo("BYTES");
      assertThat(list(upper.getJsonArray("shape"))).containsExactly(2, 2);
      assertThat(list(upper.getJsonArray("data"))).containsExactly("HELLO", "W\u00d6RLD", "", "A B");
      assertThat(list(outputs.getJsonObject(1).getJsonArray("data"))).containsExactly(5, 5, 0, 3);
    }
  }

  @Test
  void httpBinaryCarriesLengthPrefixedElementsBothWays() {
    byte[] data = lengthPrefixed("bin", "\u4e2d\u6587");
    String header = "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1,2],\"parameters\":"
        + "{\"binary_data_size\":" + data.length + "}}],\"outputs\":[{\"name\":\"upper\",\"parameters\":"
        + "{\"binary_data\":true}},{\"name\":\"length\"}]}";
    Http.Response r = http.post(port, "/v2/models/upper/infer", "application/octet-stream", concat(header, data),
        "Inference-Header-Content-Length", Integer.toString(header.getBytes(StandardCharsets.UTF_8).length));
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    int jsonLength = Integer.parseInt(r.header("Inference-Header-Content-Length"));
    JsonObject json = new JsonObject(new String(r.body(), 0, jsonLength, StandardCharsets.UTF_8));
    JsonObject upper = json.getJsonArray("outputs").getJsonObject(0);
    byte[] want = lengthPrefixed("BIN", "\u4e2d\u6587");
    assertThat(upper.getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(want.length);
    assertThat(Arrays.copyOfRange(r.body(), jsonLength, r.body().length)).isEqualTo(want);
    assertThat(list(json.getJsonArray("outputs").getJsonObject(1).getJsonArray("data"))).containsExactly(3, 2);

    // A length prefix that claims more than the body holds: 400 naming the input.
    byte[] bad = {50, 0, 0, 0, 'a', 'b'};
    String badHeader = "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1,1],\"parameters\":"
        + "{\"binary_data_size\":" + bad.length + "}}]}";
    Http.Response refused = http.post(port, "/v2/models/upper/infer", "application/octet-stream", concat(badHeader, bad),
        "Inference-Header-Content-Length", Integer.toString(badHeader.length()));
    assertThat(refused.status()).isEqualTo(400);
    assertThat(refused.text()).contains("inputs[0]").contains("BYTES element 0 claims 50 bytes");
  }

  @Test
  void grpcBytesContentsAndRawContents() {
    ModelInferRequest typed = ModelInferRequest.newBuilder().setModelName("upper").setId("typed")
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("text").setDatatype("BYTES")
            .addShape(1).addShape(2).setContents(InferTensorContents.newBuilder()
                .addBytesContents(ByteString.copyFromUtf8("grpc")).addBytesContents(ByteString.copyFromUtf8("h\u00e9"))))
        .build();
    ModelInferResponse t = ServingCluster.join(grpc.at(grpcPort).modelInfer(typed).toCompletionStage());
    assertThat(t.getOutputs(0).getContents().getBytesContentsList()).extracting(ByteString::toStringUtf8)
        .containsExactly("GRPC", "H\u00c9");
    assertThat(t.getOutputs(1).getContents().getIntContentsList()).containsExactly(4, 2);

    ModelInferRequest raw = ModelInferRequest.newBuilder().setModelName("text-onnx").setId("raw")
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("text").setDatatype("BYTES").addShape(2))
        .addRawInputContents(ByteString.copyFrom(lengthPrefixed("x", ""))).build();
    ModelInferResponse g = ServingCluster.join(grpc.at(grpcPort).modelInfer(raw).toCompletionStage());
    assertThat(g.getOutputs(0).getName()).isEqualTo("exclaimed");
    assertThat(g.getRawOutputContents(0).toByteArray()).isEqualTo(lengthPrefixed("x!", "!"));
    assertThat(g.getRawOutputContents(1).toByteArray()).isEqualTo(lengthPrefixed("x", ""));
  }

  @Test
  void theOnnxStringModelOverHttpJson() {
    Http.Response r = http.postJson(port, "/v2/models/text-onnx/infer",
        OipRequest.create().input(OipRequest.Input.bytes("text", new long[] {2}, "hi", "\u00e9t\u00e9")).json());
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    assertThat(list(r.json().getJsonArray("outputs").getJsonObject(0).getJsonArray("data"))).containsExactly("hi!", "\u00e9t\u00e9!");
    assertThat(list(r.json().getJsonArray("outputs").getJsonObject(1).getJsonArray("data"))).containsExactly("hi", "\u00e9t\u00e9");
  }

  @Test
  void concurrentRequestsOfUnevenStringsEachGetTheirOwnRows() {
    int n = 12;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<CompletableFuture<Http.Response>> answers = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        String s = "req" + i + "-" + "x".repeat(i * 29);
        String body = OipRequest.create().id("c" + i)
            .input(OipRequest.Input.bytes("text", new long[] {1, 2}, s, "y".repeat(n - i))).json();
        answers.add(CompletableFuture.supplyAsync(() -> http.postJson(port, "/v2/models/upper/infer", body), pool));
      }
      for (int i = 0; i < n; i++) {
        Http.Response r = answers.get(i).join();
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        assertThat(r.json().getString("id")).isEqualTo("c" + i);
        String s = "REQ" + i + "-" + "X".repeat(i * 29);
        assertThat(list(r.json().getJsonArray("outputs").getJsonObject(0).getJsonArray("data")))
            .containsExactly(s, "Y".repeat(n - i));
        assertThat(list(r.json().getJsonArray("outputs").getJsonObject(1).getJsonArray("data")))
            .containsExactly(s.length(), n - i);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void generateAndGenerateStreamPassText() {
    Http.Response sse = http.postJson(port, "/v2/models/words/generate_stream", "{\"text\":\"the quick fox\"}");
    assertThat(sse.status()).as(sse.text()).isEqualTo(200);
    assertThat(StreamingEndToEndTest.events(sse.text())).extracting(e -> e.json().getString("word"))
        .containsExactly("the ", "quick ", "fox ");
    Http.Response one = http.postJson(port, "/v2/models/words/generate", "{\"text\":\"b\u00f6se kleine w\u00f6rter\"}");
    assertThat(one.status()).as(one.text()).isEqualTo(200);
    assertThat(one.json().getString("word")).isEqualTo("b\u00f6se kleine w\u00f6rter ");
  }

  @Test
  void grpcModelStreamInferStreamsTheWordsAsBytesContents() {
    Vertx vertx = Vertx.vertx();
    GrpcClient client = GrpcClient.client(vertx);
    try {
      List<ModelStreamInferResponse> got = new CopyOnWriteArrayList<>();
      CompletableFuture<GrpcStatus> status = new CompletableFuture<>();
      SocketAddress at = SocketAddress.inetSocketAddress(grpcPort, ServingCluster.HOST);
      ModelInferRequest words = ModelInferRequest.newBuilder().setModelName("words").setId("w")
          .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("text").setDatatype("BYTES").addShape(1)
              .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("grüße aus kiln"))))
          .build();
      client.request(at, GRPCInferenceServiceGrpcClient.ModelStreamInfer).onSuccess(req -> {
        req.response().onSuccess(resp -> {
          resp.handler(got::add);
          resp.endHandler(v -> status.complete(resp.status()));
          resp.exceptionHandler(status::completeExceptionally);
        }).onFailure(status::completeExceptionally);
        req.write(words);
        req.end();
      }).onFailure(status::completeExceptionally);
      assertThat(ServingCluster.join(status)).isEqualTo(GrpcStatus.OK);
      assertThat(got).allSatisfy(m -> assertThat(m.getErrorMessage()).isEmpty());
      assertThat(got).extracting(m -> m.getInferResponse().getOutputs(0).getContents().getBytesContents(0).toStringUtf8())
          .containsExactly("grüße ", "aus ", "kiln ");
    } finally {
      ServingCluster.join(client.close().toCompletionStage());
      ServingCluster.join(vertx.close().toCompletionStage());
    }
  }

  static byte[] lengthPrefixed(String... elements) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (String e : elements) {
      byte[] b = e.getBytes(StandardCharsets.UTF_8);
      out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(b.length).array());
      out.writeBytes(b);
    }
    return out.toByteArray();
  }

  static byte[] concat(String header, byte[] data) {
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    byte[] out = Arrays.copyOf(h, h.length + data.length);
    System.arraycopy(data, 0, out, h.length, data.length);
    return out;
  }
}
