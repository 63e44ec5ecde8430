package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.ServingNode;
import io.kiln.gateway.StreamOptions;
import io.kiln.pools.PoolStats;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelStreamInferResponse;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Streaming through assembled nodes: the {@code builtin:chunks} pool runs on node b only, clients call node a's
 * gateway, so every chunk crosses from b's worker to a's gateway under credit. SSE ({@code generate_stream}),
 * the gathered {@code generate}, gRPC {@code ModelStreamInfer}, errors mid-stream, a client that disconnects, a
 * client that stops reading, the stream limit and the streaming meters.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class StreamingEndToEndTest {

  static final String YAML = """
      deployments:
        - name: chunks
          version: "1"
          model:
            uri: builtin:chunks
            engine: Builtin
            streaming: true
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}, node_selector: {zone: b}}
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
          queue: {max_queued: 64, timeout_ms: 60000}
        - name: wide
          version: "1"
          model:
            uri: builtin:chunks
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2048]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2048]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}, node_selector: {zone: b}}
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
        - name: echo
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: x, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.25}, node_selector: {zone: b}}
      """;

  private ServingCluster cluster;
  private final Http http = new Http();
  private int port;

  @BeforeAll
  void start() {
    Map<String, Map<String, String>> nodes = new LinkedHashMap<>();
    nodes.put("a", Map.of("zone", "a"));
    nodes.put("b", Map.of("zone", "b"));
    cluster = ServingCluster.start(nodes);
    assertThat(cluster.deploy(YAML).applied()).isTrue();
    cluster.awaitReady("chunks", 1);
    cluster.awaitReady("wide", 1);
    cluster.awaitReady("echo", 1);
    port = cluster.node("a").httpPort();
  }

  @AfterAll
  void stop() {
    cluster.close();
  }

  private static String body(int chunks, String more) {
    return "{\"id\":\"q\",\"x\":[0,0],\"parameters\":{\"chunks\":" + chunks + more + "}}";
  }

  /** One server-sent event: its type ("message" unless named) and its data. */
  record Event(String type, String data) {
    JsonObject json() {
      return new JsonObject(data);
    }
  }

  static List<Event> events(String text) {
    List<Event> out = new ArrayList<>();
    for (String block : text.split("\n\n")) {
      String type = "message";
      StringBuilder data = new StringBuilder();
      for (String line : block.split("\n")) {
        if (line.startsWith("event: ")) {
          type = line.substring(7);
        } else if (line.startsWith("data: ")) {
          data.append(line.substring(6));
        }
      }
      if (data.length() > 0) {
        out.add(new Event(type, data.toString()));
      }
    }
    return out;
  }

  @Test
  void generateStreamSendsEachChunkAsAnEventInOrder() {
    Http.Response r = http.postJson(port, "/v2/models/chunks/generate_stream", body(6, ""));

    assertThat(r.status()).isEqualTo(200);
    assertThat(r.header("content-type")).startsWith("text/event-stream");
    List<Event> events = events(r.text());
    assertThat(events).hasSize(6).allSatisfy(e -> assertThat(e.type()).isEqualTo("message"));
    for (int i = 0; i < 6; i++) {
      JsonObject e = events.get(i).json();
      assertThat(e.getString("model_name")).isEqualTo("chunks");
      assertThat(e.getString("id")).isEqualTo("q");
      assertThat(e.getJsonArray("x").getList()).containsExactly((double) i, (double) i);
    }
    String metrics = http.get(port, "/metrics").text();
    assertThat(PromText.parse(metrics).sum("kiln_gateway_stream_first_chunk_seconds_count", Map.of("model", "chunks")))
        .isGreaterThanOrEqualTo(1);
    assertThat(PromText.parse(metrics).sum("kiln_gateway_stream_chunk_interval_seconds_count", Map.of("model", "chunks")))
        .isGreaterThanOrEqualTo(5);
    assertThat(PromText.parse(metrics).sum("kiln_gateway_stream_chunks_total", Map.of("model", "chunks")))
        .isGreaterThanOrEqualTo(6);
  }

  @Test
  void generateGathersTheChunksIntoOneAnswer() {
    Http.Response r = http.postJson(port, "/v2/models/chunks/generate", body(3, ""));

    assertThat(r.status()).as(r.text()).isEqualTo(200);
    JsonObject o = r.json();
    assertThat(o.getString("model_version")).isEqualTo("1");
    assertThat(o.getJsonArray("x").getList()).containsExactly(0.0, 0.0, 1.0, 1.0, 2.0, 2.0);
  }

  @Test
  void generateHoldsNoMoreThanTheBodyLimitAndStopsTheStream() {
    long limit = io.kiln.gateway.GatewayOptions.DEFAULT_MAX_BODY_BYTES; // 8 KiB a chunk: over it at 8,193
    String body = "{\"x\":" + new JsonArray(java.util.Collections.nCopies(2048, 0)) + ",\"parameters\":{\"chunks\":"
        + (limit / 8192 + 1000) + "}}";

    Http.Response r = http.postJson(port, "/v2/models/wide/generate", body);

    assertThat(r.status()).isEqualTo(413);
    assertThat(r.json().getString("error")).contains("use generate_stream");
    await().atMost(ServingCluster.WAIT).until(() -> cluster.stats("wide", "1", "b").busyWorkers() == 0);
  }

  @Test
  void anErrorMidStreamIsAFinalErrorEvent() {
    Http.Response r = http.postJson(port, "/v2/models/chunks/generate_stream", body(10, ",\"fail_at\":2"));

    assertThat(r.status()).isEqualTo(200);
    List<Event> events = events(r.text());
    assertThat(events).hasSize(3);
    assertThat(events.get(2).type()).isEqualTo("error");
    assertThat(events.get(2).json().getString("error")).contains("fail_at");
  }

  @Test
  void errorsBeforeTheFirstChunkKeepTheirStatus() {
    Http.Response unknown = http.postJson(port, "/v2/models/nope/generate_stream", body(2, ""));
    assertThat(unknown.status()).isEqualTo(404);
    Http.Response bad = http.postJson(port, "/v2/models/chunks/generate_stream", "{\"y\":[0,0]}");
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.json().getString("error")).contains("y");
    Http.Response infer = http.postJson(port, "/v2/models/chunks/infer",
        OipRequest.fp32("x", new long[] {1, 2}, 0f, 0f).json());
    assertThat(infer.status()).isEqualTo(400);
    assertThat(infer.json().getString("error")).contains("streams").contains("generate_stream");
  }

  @Test
  void aModelThatDoesNotStreamAnswersGenerateStreamWithOneEvent() {
    Http.Response r = http.postJson(port, "/v2/models/echo/generate_stream", "{\"x\":[3,4]}");

    assertThat(r.status()).isEqualTo(200);
    assertThat(events(r.text())).singleElement()
        .satisfies(e -> assertThat(e.json().getJsonArray("x").getList()).containsExactly(3.0, 4.0));
  }

  @Test
  void aClientThatDisconnectsMidStreamFreesTheWorker() throws IOException {
    try (Raw raw = new Raw(port, "/v2/models/chunks/generate_stream", body(100_000, ",\"delay_ms\":5"))) {
      raw.readUntil(3);
    }
    // Had the stream gone on, its 100,000 chunks would hold the only worker for minutes.
    await().atMost(ServingCluster.WAIT).until(() -> {
      PoolStats s = cluster.stats("chunks", "1", "b");
      return s.busyWorkers() == 0 && s.outstanding() == 0;
    });
    Http.Response next = http.postJson(port, "/v2/models/chunks/generate", body(2, ""));
    assertThat(next.status()).isEqualTo(200);
    await().until(() -> active() == 0);
  }

  @Test
  void aClientThatStopsReadingPausesTheWorkerAndGetsEverythingOnceItReads() throws IOException {
    int chunks = 2000;
    String body = "{\"x\":" + new JsonArray(java.util.Collections.nCopies(2048, 0)) + ",\"parameters\":{\"chunks\":"
        + chunks + "}}";
    try (Raw raw = new Raw(port, "/v2/models/wide/generate_stream", body)) {
      // One read may hold several ~14 kB events; count them all.
      int first = raw.readUntil(1);
      // The socket buffers fill, Vert.x's write queue fills, the stream pauses, the worker stops at its window.
      await().atMost(ServingCluster.WAIT).until(() -> sent("wide") > 0);
      await().atMost(ServingCluster.WAIT).pollInterval(Duration.ofMillis(200))
          .until(new Plateau(() -> sent("wide"), 5));
      double atRest = sent("wide");
      System.out.printf("slow reader: %.0f of %d chunks (~14 kB each) produced while the client read nothing%n",
          atRest, chunks);
      assertThat(atRest).as("chunks produced while the client read nothing").isLessThan(chunks);
      assertThat(cluster.stats("wide", "1", "b").busyWorkers()).as("the stream holds its worker, paused").isEqualTo(1);

      assertThat(first + raw.readToEnd()).as("every chunk once the client reads").isEqualTo(chunks);
    }
  }

  @Test
  void overTheStreamLimitIs503WithRetryAfter() throws IOException {
    ServingNode a = cluster.node("a");
    a.gateway().streamOptions(new StreamOptions(1, 16, StreamOptions.DEFAULT_MAX_CHUNK_BYTES));
    try (Raw raw = new Raw(port, "/v2/models/chunks/generate_stream", body(100_000, ",\"delay_ms\":5"))) {
      raw.readUntil(1);
      Http.Response r = http.postJson(port, "/v2/models/chunks/generate_stream", body(2, ""));
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.header("retry-after")).isNotNull();
      assertThat(r.json().getString("error")).contains("too many streams");
    } finally {
      a.gateway().streamOptions(StreamOptions.DEFAULTS);
    }
    await().atMost(ServingCluster.WAIT).until(() -> active() == 0);
  }

  @Test
  void modelStreamInferAnswersEachRequestWithItsChunksAndErrorsAsMessages() {
    Vertx vertx = Vertx.vertx();
    GrpcClient client = GrpcClient.client(vertx);
    try {
      List<ModelStreamInferResponse> got = new CopyOnWriteArrayList<>();
      CompletableFuture<GrpcStatus> status = new CompletableFuture<>();
      SocketAddress at = SocketAddress.inetSocketAddress(cluster.node("a").grpcPort(), ServingCluster.HOST);
      client.request(at, GRPCInferenceServiceGrpcClient.ModelStreamInfer).onSuccess(req -> {
        req.response().onSuccess(resp -> {
          resp.handler(got::add);
          resp.endHandler(v -> status.complete(resp.status()));
          resp.exceptionHandler(status::completeExceptionally);
        }).onFailure(status::completeExceptionally);
        req.write(grpcRequest("g1", 3, -1));
        req.write(grpcRequest("g2", 5, 2));
        req.end();
      }).onFailure(status::completeExceptionally);

      assertThat(ServingCluster.join(status)).isEqualTo(GrpcStatus.OK);
      List<Float> g1 = new ArrayList<>();
      List<Float> g2 = new ArrayList<>();
      List<String> errors = new ArrayList<>();
      for (ModelStreamInferResponse m : got) {
        if (!m.getErrorMessage().isEmpty()) {
          errors.add(m.getErrorMessage());
          continue;
        }
        ModelInferResponse r = m.getInferResponse();
        (r.getId().equals("g1") ? g1 : g2).add(first(r));
      }
      assertThat(g1).containsExactly(0f, 1f, 2f);
      assertThat(g2).containsExactly(0f, 1f);
      assertThat(errors).singleElement().asString().contains("fail_at").contains("g2");
    } finally {
      ServingCluster.join(client.close().toCompletionStage());
      ServingCluster.join(vertx.close().toCompletionStage());
    }
  }

  @Test
  void aCancelledModelStreamInferCallFreesTheWorker() {
    Vertx vertx = Vertx.vertx();
    GrpcClient client = GrpcClient.client(vertx);
    try {
      List<ModelStreamInferResponse> got = new CopyOnWriteArrayList<>();
      AtomicReference<io.vertx.grpc.client.GrpcClientRequest<ModelInferRequest, ModelStreamInferResponse>> call =
          new AtomicReference<>();
      SocketAddress at = SocketAddress.inetSocketAddress(cluster.node("a").grpcPort(), ServingCluster.HOST);
      client.request(at, GRPCInferenceServiceGrpcClient.ModelStreamInfer).onSuccess(req -> {
        call.set(req);
        req.response().onSuccess(resp -> resp.handler(got::add));
        req.write(ModelInferRequest.newBuilder(grpcRequest("long", 100_000, -1))
            .putParameters("delay_ms", InferParameter.newBuilder().setInt64Param(5).build()).build());
      });
      await().atMost(ServingCluster.WAIT).until(() -> got.size() >= 3);

      vertx.runOnContext(v -> call.get().cancel());

      await().atMost(ServingCluster.WAIT).until(() -> {
        PoolStats s = cluster.stats("chunks", "1", "b");
        return s.busyWorkers() == 0 && s.outstanding() == 0;
      });
      assertThat(http.postJson(port, "/v2/models/chunks/generate", body(2, "")).status()).isEqualTo(200);
      await().until(() -> active() == 0);
    } finally {
      ServingCluster.join(client.close().toCompletionStage());
      ServingCluster.join(vertx.close().toCompletionStage());
    }
  }

  private static ModelInferRequest grpcRequest(String id, int chunks, int failAt) {
    ModelInferRequest.Builder b = ModelInferRequest.newBuilder().setModelName("chunks").setId(id)
        .putParameters("chunks", InferParameter.newBuilder().setInt64Param(chunks).build())
        .addInputs(InferInputTensor.newBuilder().setName("x").setDatatype("FP32").addShape(1).addShape(2)
            .setContents(InferTensorContents.newBuilder().addFp32Contents(0).addFp32Contents(0)));
    if (failAt >= 0) {
      b.putParameters("fail_at", InferParameter.newBuilder().setInt64Param(failAt).build());
    }
    return b.build();
  }

  private static float first(ModelInferResponse r) {
    if (r.getRawOutputContentsCount() > 0) {
      return ByteBuffer.wrap(r.getRawOutputContents(0).toByteArray()).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    }
    return r.getOutputs(0).getContents().getFp32Contents(0);
  }

  private double sent(String model) {
    return PromText.parse(http.get(port, "/metrics").text()).sum("kiln_gateway_stream_chunks_total", Map.of("model", model));
  }

  private double active() {
    return PromText.parse(http.get(port, "/metrics").text()).sum("kiln_gateway_streams_in_flight", Map.of());
  }

  /** True once the value has not changed over {@code polls} consecutive polls. */
  private static final class Plateau implements java.util.concurrent.Callable<Boolean> {
    private final java.util.function.DoubleSupplier value;
    private final int polls;
    private double last = Double.NaN;
    private int same;

    Plateau(java.util.function.DoubleSupplier value, int polls) {
      this.value = value;
      this.polls = polls;
    }

    @Override
    public Boolean call() {
      double v = value.getAsDouble();
      same = v == last ? same + 1 : 0;
      last = v;
      return same >= polls;
    }
  }

  /** A streaming request on a socket of its own, read only as far as the test says. */
  private static final class Raw implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final AtomicReference<String> tail = new AtomicReference<>("");

    Raw(int port, String path, String json) throws IOException {
      socket = new Socket(ServingCluster.HOST, port);
      socket.setReceiveBufferSize(64 * 1024);
      socket.setSoTimeout((int) ServingCluster.WAIT.toMillis());
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      OutputStream out = socket.getOutputStream();
      out.write(("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      in = socket.getInputStream();
    }

    /** Reads until {@code events} "data: " markers have been seen; returns how many were. */
    int readUntil(int events) throws IOException {
      return read(events, null);
    }

    /** Reads to the end of the chunked response; returns the "data: " markers seen on the way. */
    int readToEnd() throws IOException {
      return read(Integer.MAX_VALUE, "\r\n0\r\n\r\n");
    }

    private int read(int events, String end) throws IOException {
      byte[] buf = new byte[64 * 1024];
      int seen = 0;
      String carry = tail.get();
      while (seen < events) {
        int n = in.read(buf);
        if (n < 0) {
          throw new UncheckedIOException(new IOException("the server closed the stream after " + seen + " events"));
        }
        String text = carry + new String(buf, 0, n, StandardCharsets.ISO_8859_1);
        for (int i = text.indexOf("data: "); i >= 0; i = text.indexOf("data: ", i + 1)) {
          if (i >= carry.length() - 5 || carry.isEmpty()) {
            seen++;
          }
        }
        carry = text.substring(Math.max(0, text.length() - 8));
        if (end != null && text.endsWith(end)) {
          break;
        }
      }
      tail.set(carry);
      return seen;
    }

    @Override
    public void close() {
      try {
        socket.close();
      } catch (IOException ignored) {
        // closing is the point
      }
    }
  }
}
