package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A multi-megabyte output, byte for byte: PP-OCRv4 recognition ({@code models/ocr/rec}, [8, 3, 48, 320] FP32 in, an
 * [8, 40, 6625] FP32 output of 8,480,000 bytes) served by an assembled node on ONNX Runtime answers over HTTP with the
 * binary extension, over gRPC with raw contents, and through system shared memory (input read from a region, output
 * written into one) exactly the bytes the same model gives when run directly in this JVM with the same session
 * settings. Without the model ({@code models/ocr/fetch.sh}) it skips locally and fails under {@code CI=true}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class BigTensorsEndToEndTest {

  static final Path MODEL = ServingCluster.repositoryRoot().resolve("models/ocr/rec/model.onnx");
  static final long[] SHAPE = {8, 3, 48, 320};
  static final int IN_BYTES = 8 * 3 * 48 * 320 * 4;
  static final String OUTPUT = "softmax_11.tmp_0";
  static final String YAML = """
      deployments:
        - name: rec
          version: "1"
          model:
            uri: models/ocr/rec
            engine: OnnxRuntime
            inputs:  [{name: x, datatype: FP32, shape: [-1, 3, 48, -1]}]
            outputs: [{name: softmax_11.tmp_0, datatype: FP32, shape: [-1, -1, 6625]}]
            threads: {intra_op: 2, inter_op: 1}
            warmup: {batch_sizes: []}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 1}
      """;

  private final Http http = new Http();
  private ServingCluster cluster;
  private Vertx vertx;
  private byte[] input;
  private byte[] direct;
  private long[] directShape;

  @BeforeAll
  void start() throws Exception {
    if (!Files.isRegularFile(MODEL)) {
      String why = "models missing: run models/ocr/fetch.sh (./run-tests does)";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(why);
      }
      Assumptions.abort(why);
    }
    // A text-line-like input: smooth values in [-1, 1] with noise, fixed seed.
    Random random = new Random(36);
    ByteBuffer in = ByteBuffer.allocate(IN_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < IN_BYTES / 4; i++) {
      in.putFloat((float) Math.sin(i * 0.001) * 0.8f + (random.nextFloat() - 0.5f) * 0.4f);
    }
    input = in.array();
    runDirectly();
    cluster = ServingCluster.start("node-1");
    assertThat(cluster.deploy(YAML).applied()).isTrue();
    cluster.awaitReady("rec", 1);
    vertx = Vertx.vertx();
  }

  /** The model in this JVM, as the worker opens it (all optimisations, 2 intra-op threads, 1 inter-op). */
  private void runDirectly() throws Exception {
    OrtEnvironment env = OrtEnvironment.getEnvironment();
    try (OrtSession.SessionOptions o = new OrtSession.SessionOptions()) {
      o.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
      o.setIntraOpNumThreads(2);
      o.setInterOpNumThreads(1);
      try (OrtSession session = env.createSession(MODEL.toString(), o);
           OnnxTensor x = OnnxTensor.createTensor(env, ByteBuffer.allocateDirect(IN_BYTES).order(ByteOrder.nativeOrder())
               .put(input).flip().asFloatBuffer(), SHAPE);
           OrtSession.Result r = session.run(Map.of("x", x))) {
        OnnxTensor out = (OnnxTensor) r.get(OUTPUT).orElseThrow();
        directShape = out.getInfo().getShape();
        ByteBuffer b = out.getByteBuffer();
        direct = new byte[b.remaining()];
        b.get(direct);
      }
    }
    assertThat(directShape).containsExactly(8, 40, 6625);
    assertThat(direct.length).isEqualTo(8 * 40 * 6625 * 4);
  }

  @AfterAll
  void stop() {
    if (vertx != null) {
      ServingCluster.join(vertx.close().toCompletionStage());
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private int httpPort() {
    return cluster.node("node-1").httpPort();
  }

  @Test
  void httpWithTheBinaryExtensionAnswersTheModelsExactBytes() {
    byte[] header = new JsonObject()
        .put("inputs", new JsonArray().add(new JsonObject().put("name", "x").put("datatype", "FP32")
            .put("shape", new JsonArray(Arrays.stream(SHAPE).boxed().toList()))
            .put("parameters", new JsonObject().put("binary_data_size", IN_BYTES))))
        .put("outputs", new JsonArray().add(new JsonObject().put("name", OUTPUT)
            .put("parameters", new JsonObject().put("binary_data", true))))
        .encode().getBytes(StandardCharsets.UTF_8);
    byte[] body = new byte[header.length + IN_BYTES];
    System.arraycopy(header, 0, body, 0, header.length);
    System.arraycopy(input, 0, body, header.length, IN_BYTES);
    Http.Response r = http.post(httpPort(), "/v2/models/rec/infer", "application/octet-stream", body,
        "Inference-Header-Content-Length", Integer.toString(header.length));
    assertThat(r.status()).as(() -> new String(r.body(), StandardCharsets.UTF_8)).isEqualTo(200);
    int jsonLength = Integer.parseInt(r.headers().firstValue("Inference-Header-Content-Length").orElseThrow());
    JsonObject json = new JsonObject(new String(r.body(), 0, jsonLength, StandardCharsets.UTF_8));
    JsonObject out = json.getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getJsonArray("shape").getList()).containsExactly(8, 40, 6625);
    assertThat(out.getJsonObject("parameters").getLong("binary_data_size")).isEqualTo(direct.length);
    assertThat(Arrays.copyOfRange(r.body(), jsonLength, r.body().length)).isEqualTo(direct);
  }

  @Test
  void grpcWithRawContentsAnswersTheModelsExactBytes() {
    GrpcClient client = GrpcClient.client(vertx, new GrpcClientOptions().setMaxMessageSize(64 * 1024 * 1024));
    try {
      GRPCInferenceServiceGrpcClient grpc = GRPCInferenceServiceGrpcClient.create(client,
          SocketAddress.inetSocketAddress(cluster.node("node-1").grpcPort(), ServingCluster.HOST));
      ModelInferRequest.InferInputTensor.Builder x = ModelInferRequest.InferInputTensor.newBuilder().setName("x")
          .setDatatype("FP32");
      Arrays.stream(SHAPE).forEach(x::addShape);
      ModelInferResponse r = ServingCluster.join(grpc.modelInfer(ModelInferRequest.newBuilder().setModelName("rec")
          .addInputs(x).addRawInputContents(ByteString.copyFrom(input)).build()).toCompletionStage());
      assertThat(r.getOutputs(0).getShapeList()).containsExactly(8L, 40L, 6625L);
      assertThat(r.getRawOutputContents(0).toByteArray()).isEqualTo(direct);
    } finally {
      ServingCluster.join(client.close().toCompletionStage());
    }
  }

  @Test
  void sharedMemoryTakesTheInputAndReceivesTheModelsExactBytes() throws Exception {
    String key = "kiln-test-rec-" + UUID.randomUUID();
    Path object = Path.of("/dev/shm", key);
    int outAt = 4096 + IN_BYTES; // the output's window starts past the input's, at an odd place on purpose
    try (FileChannel ch = FileChannel.open(object, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      ch.truncate(outAt + direct.length + 100);
      ch.write(ByteBuffer.allocate(1), outAt + direct.length + 99);
      ch.write(ByteBuffer.wrap(input), 4096);
      Http.Response reg = http.postJson(httpPort(), "/v2/systemsharedmemory/region/rec-io/register", new JsonObject()
          .put("key", "/" + key).put("offset", 0).put("byte_size", outAt + direct.length + 100).encode());
      assertThat(reg.status()).as(() -> new String(reg.body(), StandardCharsets.UTF_8)).isEqualTo(200);
      String request = new JsonObject()
          .put("inputs", new JsonArray().add(new JsonObject().put("name", "x").put("datatype", "FP32")
              .put("shape", new JsonArray(Arrays.stream(SHAPE).boxed().toList()))
              .put("parameters", shm(4096, IN_BYTES))))
          .put("outputs", new JsonArray().add(new JsonObject().put("name", OUTPUT)
              .put("parameters", shm(outAt, direct.length + 100))))
          .encode();
      Http.Response r = http.postJson(httpPort(), "/v2/models/rec/infer", request);
      assertThat(r.status()).as(() -> new String(r.body(), StandardCharsets.UTF_8)).isEqualTo(200);
      JsonObject out = new JsonObject(new String(r.body(), StandardCharsets.UTF_8)).getJsonArray("outputs")
          .getJsonObject(0);
      assertThat(out.getJsonArray("shape").getList()).containsExactly(8, 40, 6625);
      assertThat(out.containsKey("data")).isFalse();
      assertThat(out.getJsonObject("parameters").getLong("shared_memory_byte_size")).isEqualTo(direct.length);
      ByteBuffer got = ByteBuffer.allocate(direct.length);
      while (got.hasRemaining()) {
        ch.read(got, outAt + got.position());
      }
      assertThat(got.array()).isEqualTo(direct);
    } finally {
      http.post(httpPort(), "/v2/systemsharedmemory/region/rec-io/unregister", "application/json", new byte[0]);
      Files.deleteIfExists(object);
    }
  }

  private static JsonObject shm(long offset, long size) {
    return new JsonObject().put("shared_memory_region", "rec-io").put("shared_memory_offset", offset)
        .put("shared_memory_byte_size", size);
  }
}
