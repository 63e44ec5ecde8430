package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ServerMetadataRequest;
import io.kiln.protocol.grpc.ServerMetadataResponse;
import io.kiln.protocol.grpc.SystemSharedMemoryRegisterRequest;
import io.kiln.protocol.grpc.SystemSharedMemoryRegisterResponse;
import io.kiln.protocol.grpc.SystemSharedMemoryStatusRequest;
import io.kiln.protocol.grpc.SystemSharedMemoryStatusResponse;
import io.kiln.protocol.grpc.SystemSharedMemoryUnregisterRequest;
import io.kiln.protocol.grpc.SystemSharedMemoryUnregisterResponse;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.grpc.common.GrpcStatus;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Triton's system shared-memory extension on a real gateway, with real POSIX shared-memory objects in
 * {@code /dev/shm}: regions registered, reported and unregistered over HTTP and gRPC behind the management token; an
 * input read from a region and an output written into one (the test cluster doubles FP32), the response naming the
 * output's shape and window with no data; every bad window, key and size refused with 400 / INVALID_ARGUMENT naming
 * the field, before anything reaches a pool.
 */
class SharedMemoryTest extends GatewayTestBase {

  static final String TOKEN = "s3cret";
  static final Map<String, String> AUTH = Map.of("Authorization", "Bearer " + TOKEN);
  static final Path SHM = Path.of("/dev/shm");

  private final List<Path> objects = new ArrayList<>();

  @Override
  protected GatewayOptions.Builder configure(GatewayOptions.Builder options) {
    return options.managementToken(TOKEN);
  }

  @AfterEach
  void cleanUp() throws IOException {
    post("/v2/systemsharedmemory/unregister", Buffer.buffer(), AUTH);
    for (Path p : objects) {
      Files.deleteIfExists(p);
    }
    objects.clear();
  }

  /** A fresh shared-memory object of {@code size} zero bytes; its key. */
  private String object(long size) throws IOException {
    String key = "kiln-test-" + UUID.randomUUID();
    Path p = SHM.resolve(key);
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.truncate(size);
      ch.write(ByteBuffer.allocate(1), size - 1);
    }
    objects.add(p);
    return "/" + key;
  }

  private static void write(String key, long at, byte[] data) throws IOException {
    try (FileChannel ch = FileChannel.open(SHM.resolve(key.substring(1)), StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(data), at);
    }
  }

  private static byte[] read(String key, long at, int n) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(n);
    try (FileChannel ch = FileChannel.open(SHM.resolve(key.substring(1)), StandardOpenOption.READ)) {
      while (b.hasRemaining() && ch.read(b, at + b.position()) > 0) {
        // reads until full
      }
    }
    return b.array();
  }

  private HttpResponse<Buffer> register(String name, String key, long offset, long size, Map<String, String> auth) {
    return post("/v2/systemsharedmemory/region/" + name + "/register", new JsonObject().put("key", key)
        .put("offset", offset).put("byte_size", size).toBuffer(), auth);
  }

  private static byte[] floats(int n, float seed) {
    ByteBuffer b = ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      b.putFloat(seed + i * 0.25f);
    }
    return b.array();
  }

  private static byte[] doubled(byte[] floats) {
    ByteBuffer in = ByteBuffer.wrap(floats).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = ByteBuffer.allocate(floats.length).order(ByteOrder.LITTLE_ENDIAN);
    while (in.hasRemaining()) {
      out.putFloat(2 * in.getFloat());
    }
    return out.array();
  }

  private static JsonObject shm(String region, long offset, long size) {
    return new JsonObject().put("shared_memory_region", region).put("shared_memory_offset", offset)
        .put("shared_memory_byte_size", size);
  }

  private HttpResponse<Buffer> infer(JsonObject input, JsonObject output) {
    JsonObject body = new JsonObject().put("inputs", new JsonArray().add(input));
    if (output != null) {
      body.put("outputs", new JsonArray().add(output));
    }
    return postJson("/v2/models/" + TestModels.identity(DataType.FP32) + "/infer", body.encode());
  }

  @Test
  void regionsAreRegisteredReportedAndUnregisteredOverHttpBehindTheToken() throws IOException {
    String key = object(4096);
    assertThat(register("a", key, 0, 4096, Map.of()).statusCode()).isEqualTo(401);
    HttpResponse<Buffer> ok = register("a", key, 1024, 2048, AUTH);
    assertThat(ok.statusCode()).as(ok.bodyAsString()).isEqualTo(200);
    HttpResponse<Buffer> status = post("/v2/systemsharedmemory/status", Buffer.buffer(), AUTH);
    assertThat(status.statusCode()).isEqualTo(405); // status is a GET
    assertThat(get("/v2/systemsharedmemory/status").statusCode()).isEqualTo(401);
    HttpResponse<Buffer> all = getWithAuth("/v2/systemsharedmemory/status");
    assertThat(all.bodyAsJsonArray()).isEqualTo(new JsonArray().add(new JsonObject().put("name", "a").put("key", key)
        .put("offset", 1024).put("byte_size", 2048)));
    assertThat(getWithAuth("/v2/systemsharedmemory/region/a/status").bodyAsJsonArray().size()).isEqualTo(1);
    HttpResponse<Buffer> unknown = getWithAuth("/v2/systemsharedmemory/region/b/status");
    assertThat(unknown.statusCode()).isEqualTo(400);
    assertThat(unknown.bodyAsJsonObject().getString("error")).isEqualTo("name: no shared-memory region 'b' is registered");
    assertThat(register("a", key, 0, 8, AUTH).bodyAsJsonObject().getString("error"))
        .isEqualTo("name: region 'a' is already registered; unregister it first");
    assertThat(post("/v2/systemsharedmemory/region/a/unregister", Buffer.buffer(), Map.of()).statusCode()).isEqualTo(401);
    assertThat(post("/v2/systemsharedmemory/region/a/unregister", Buffer.buffer(), AUTH).statusCode()).isEqualTo(200);
    assertThat(getWithAuth("/v2/systemsharedmemory/status").bodyAsJsonArray()).isEmpty();
    assertThat(get("/v2").bodyAsJsonObject().getJsonArray("extensions").getList()).contains("system_shared_memory");
  }

  private HttpResponse<Buffer> getWithAuth(String path) {
    return join(http.get(gateway.httpPort(), HOST, path).putHeader("Authorization", "Bearer " + TOKEN).send());
  }

  @Test
  void badKeysWindowsAndBodiesAreRefusedNamingTheField() throws IOException {
    String key = object(4096);
    Map<String, String> cases = Map.of(
        "/../etc/passwd", "key: '/../etc/passwd' must be one name of an object in /dev/shm (an optional leading '/',"
            + " no other '/', no '..')",
        "a/b", "key: 'a/b' must be one name of an object in /dev/shm (an optional leading '/', no other '/', no '..')",
        "/kiln-test-none-" + UUID.randomUUID(), "key: no shared-memory object");
    cases.forEach((k, message) -> {
      HttpResponse<Buffer> r = register("r", k, 0, 16, AUTH);
      assertThat(r.statusCode()).as(k).isEqualTo(400);
      assertThat(r.bodyAsJsonObject().getString("error")).as(k).startsWith(message);
    });
    HttpResponse<Buffer> beyond = register("r", key, 4000, 200, AUTH);
    assertThat(beyond.statusCode()).isEqualTo(400);
    assertThat(beyond.bodyAsJsonObject().getString("error"))
        .isEqualTo("byte_size: offset 4000 + byte_size 200 is beyond the end of '" + key + "' (4096 bytes)");
    assertThat(Files.size(SHM.resolve(key.substring(1)))).as("the object is never grown").isEqualTo(4096);
    HttpResponse<Buffer> noSize = post("/v2/systemsharedmemory/region/r/register",
        new JsonObject().put("key", key).toBuffer(), AUTH);
    assertThat(noSize.bodyAsJsonObject().getString("error")).isEqualTo("byte_size: missing");
    HttpResponse<Buffer> notJson = post("/v2/systemsharedmemory/region/r/register", Buffer.buffer("{"), AUTH);
    assertThat(notJson.statusCode()).isEqualTo(400);
    assertThat(getWithAuth("/v2/systemsharedmemory/status").bodyAsJsonArray()).isEmpty();
  }

  @Test
  void anInputIsReadFromARegionAndItsOutputWrittenIntoAnother() throws IOException {
    int n = 200_000; // 800 KB each way, under the test gateway's 1 MiB body limit
    byte[] in = floats(n, -7f);
    String inKey = object(4L * n + 64);
    String outKey = object(4L * n + 128);
    write(inKey, 64, in);
    assertThat(register("in", inKey, 0, 4L * n + 64, AUTH).statusCode()).isEqualTo(200);
    assertThat(register("out", outKey, 0, 4L * n + 128, AUTH).statusCode()).isEqualTo(200);
    JsonObject input = new JsonObject().put("name", "x").put("datatype", "FP32").put("shape", new JsonArray().add(n))
        .put("parameters", shm("in", 64, 4L * n));
    double offloaded = offloaded();
    HttpResponse<Buffer> r = infer(input, new JsonObject().put("name", "y").put("parameters", shm("out", 128, 4L * n)));
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    // A body of a few hundred bytes, but 800 KB to copy out of the region and into the other: off the event loop.
    assertThat(offloaded() - offloaded).isEqualTo(2);
    assertThat(cluster.last().request().inputs().get(0)).isEqualTo(new Tensor("x", DataType.FP32, new long[] {n}, in));
    JsonObject out = r.bodyAsJsonObject().getJsonArray("outputs").getJsonObject(0);
    assertThat(out.getJsonArray("shape").getList()).containsExactly(n);
    assertThat(out.containsKey("data")).isFalse();
    assertThat(out.getJsonObject("parameters").getMap()).isEqualTo(Map.of("shared_memory_region", "out",
        "shared_memory_byte_size", 4 * n));
    assertThat(read(outKey, 128, 4 * n)).isEqualTo(doubled(in));
    assertThat(read(outKey, 0, 128)).as("nothing written before the window").isEqualTo(new byte[128]);
  }

  @Test
  void windowsOutsideTheirRegionAndOutputsLargerThanTheirWindowAre400NamingTheParameter() throws IOException {
    String key = object(1024);
    assertThat(register("small", key, 0, 1024, AUTH).statusCode()).isEqualTo(200);
    JsonObject input = new JsonObject().put("name", "x").put("datatype", "FP32").put("shape", new JsonArray().add(64));
    HttpResponse<Buffer> beyond = infer(input.copy().put("parameters", shm("small", 800, 256)), null);
    assertThat(beyond.statusCode()).isEqualTo(400);
    assertThat(beyond.bodyAsJsonObject().getString("error")).isEqualTo("inputs[0].parameters.shared_memory_byte_size:"
        + " offset 800 + byte_size 256 is beyond the end of region 'small' (1024 bytes)");
    HttpResponse<Buffer> wrongSize = infer(input.copy().put("parameters", shm("small", 0, 255)), null);
    assertThat(wrongSize.bodyAsJsonObject().getString("error"))
        .isEqualTo("inputs[0].parameters.shared_memory_byte_size: 255 bytes, but FP32 shape [64] needs 256");
    HttpResponse<Buffer> unknown = infer(input.copy().put("parameters", shm("nope", 0, 256)), null);
    assertThat(unknown.bodyAsJsonObject().getString("error"))
        .isEqualTo("inputs[0].parameters.shared_memory_region: no shared-memory region 'nope' is registered");
    HttpResponse<Buffer> half = infer(input.copy().put("parameters", new JsonObject().put("shared_memory_region", "small")),
        null);
    assertThat(half.bodyAsJsonObject().getString("error"))
        .isEqualTo("inputs[0].parameters.shared_memory_byte_size: missing (shared_memory_region is given)");
    HttpResponse<Buffer> both = infer(input.copy().put("data", new JsonArray(new ArrayList<>(java.util.Collections
        .nCopies(64, 1.0)))).put("parameters", shm("small", 0, 256)), null);
    assertThat(both.bodyAsJsonObject().getString("error"))
        .isEqualTo("inputs[0].parameters.shared_memory_region: must not be given with data");
    HttpResponse<Buffer> outBeyond = infer(input.copy().put("parameters", shm("small", 0, 256)),
        new JsonObject().put("name", "y").put("parameters", shm("small", 1000, 256)));
    assertThat(outBeyond.bodyAsJsonObject().getString("error")).isEqualTo("outputs[0].parameters"
        + ".shared_memory_byte_size: offset 1000 + byte_size 256 is beyond the end of region 'small' (1024 bytes)");
    assertThat(cluster.sent).as("nothing above reached a pool").isEmpty();
    HttpResponse<Buffer> tooSmall = infer(input.copy().put("parameters", shm("small", 0, 256)),
        new JsonObject().put("name", "y").put("parameters", shm("small", 512, 100)));
    assertThat(tooSmall.statusCode()).isEqualTo(400);
    assertThat(tooSmall.bodyAsJsonObject().getString("error")).isEqualTo("outputs[0].parameters"
        + ".shared_memory_byte_size: output 'y' has 256 bytes (shape [64]), more than the 100 given");
  }

  @Test
  void grpcRegistersReadsWritesAndUnregisters() throws IOException {
    int n = 50_000;
    byte[] in = floats(n, 3f);
    String key = object(8L * n);
    write(key, 0, in);
    SystemSharedMemoryRegisterRequest reg = SystemSharedMemoryRegisterRequest.newBuilder().setName("g").setKey(key)
        .setOffset(0).setByteSize(8L * n).build();
    GrpcResult<SystemSharedMemoryRegisterResponse> refused = call(GRPCInferenceServiceGrpcClient.SystemSharedMemoryRegister,
        reg);
    assertThat(refused.status()).isEqualTo(GrpcStatus.UNAUTHENTICATED);
    Map<String, String> auth = Map.of("authorization", "Bearer " + TOKEN);
    GrpcResult<SystemSharedMemoryRegisterResponse> ok = call(GRPCInferenceServiceGrpcClient.SystemSharedMemoryRegister,
        reg, auth, 0);
    assertThat(ok.status()).as(ok.message()).isEqualTo(GrpcStatus.OK);
    GrpcResult<SystemSharedMemoryStatusResponse> status = call(GRPCInferenceServiceGrpcClient.SystemSharedMemoryStatus,
        SystemSharedMemoryStatusRequest.getDefaultInstance(), auth, 0);
    assertThat(status.body().getRegionsMap()).containsOnlyKeys("g");
    assertThat(status.body().getRegionsMap().get("g").getByteSize()).isEqualTo(8L * n);

    ModelInferRequest req = ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.FP32))
        .addInputs(ModelInferRequest.InferInputTensor.newBuilder().setName("x").setDatatype("FP32").addShape(n)
            .putParameters("shared_memory_region", str("g")).putParameters("shared_memory_byte_size", i64(4L * n)))
        .addOutputs(ModelInferRequest.InferRequestedOutputTensor.newBuilder().setName("y")
            .putParameters("shared_memory_region", str("g")).putParameters("shared_memory_offset", i64(4L * n))
            .putParameters("shared_memory_byte_size", i64(4L * n)))
        .build();
    GrpcResult<ModelInferResponse> r = call(GRPCInferenceServiceGrpcClient.ModelInfer, req);
    assertThat(r.status()).as(r.message()).isEqualTo(GrpcStatus.OK);
    ModelInferResponse.InferOutputTensor out = r.body().getOutputs(0);
    assertThat(out.getShapeList()).containsExactly((long) n);
    assertThat(out.hasContents()).isFalse();
    assertThat(out.getParametersMap().get("shared_memory_byte_size").getInt64Param()).isEqualTo(4L * n);
    assertThat(read(key, 4L * n, 4 * n)).isEqualTo(doubled(in));
    assertThat(read(key, 0, 4 * n)).as("the input half is untouched").isEqualTo(in);

    GrpcResult<ServerMetadataResponse> meta = call(GRPCInferenceServiceGrpcClient.ServerMetadata,
        ServerMetadataRequest.getDefaultInstance());
    assertThat(meta.body().getExtensionsList()).contains("system_shared_memory");
    GrpcResult<SystemSharedMemoryUnregisterResponse> gone = call(
        GRPCInferenceServiceGrpcClient.SystemSharedMemoryUnregister,
        SystemSharedMemoryUnregisterRequest.newBuilder().setName("g").build(), auth, 0);
    assertThat(gone.status()).isEqualTo(GrpcStatus.OK);
    GrpcResult<ModelInferResponse> after = call(GRPCInferenceServiceGrpcClient.ModelInfer, req);
    assertThat(after.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(after.message())
        .isEqualTo("inputs[0].parameters.shared_memory_region: no shared-memory region 'g' is registered");
  }

  private double offloaded() {
    var c = registry.find("kiln.gateway.offloaded").tag("protocol", "http").counter();
    return c == null ? 0 : c.count();
  }

  private static InferParameter str(String s) {
    return InferParameter.newBuilder().setStringParam(s).build();
  }

  private static InferParameter i64(long v) {
    return InferParameter.newBuilder().setInt64Param(v).build();
  }
}
