package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServer;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Each protocol puts the right bytes on the wire, and each kind of failure lands in its own outcome. */
class ProtocolsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static LoadRunner runner;

  @BeforeAll
  static void start() {
    runner = LoadRunner.create(1);
  }

  @AfterAll
  static void stop() {
    runner.close();
  }

  private static LoadOptions.Builder quick(int port) {
    return LoadOptions.builder().target("http://127.0.0.1:" + port).mode(LoadMode.CLOSED).connections(2)
        .warmup(Duration.ZERO).duration(Duration.ofSeconds(5)).maxRequests(20);
  }

  private static float[] floats(ByteBuffer raw) {
    float[] f = new float[raw.remaining() / 4];
    raw.order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
    return f;
  }

  @Test
  void grpcSendsModelInferWithRawInputContentsAndCountsStatusCodes() throws Exception {
    RequestTemplate template = RequestTemplate.generatedFp32("input", new long[] {2, 3}, 1);
    ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1));
    try {
      GrpcServer grpc = GrpcServer.server(vertx).callHandler(call -> {
        if (!call.fullMethodName().equals("inference.GRPCInferenceService/ModelInfer")) {
          problems.add("method " + call.fullMethodName());
        }
        call.last().onSuccess(msg -> {
          try {
            DecodedInferRequest req = DecodedInferRequest.decode(msg.getBytes());
            if (!req.inputs().equals(List.of(new DecodedInferRequest.Input("input", "FP32", List.of(2L, 3L))))
                || req.raw().size() != 1
                || !java.util.Arrays.equals(floats(ByteBuffer.wrap(req.raw().get(0))), floats(template.inputs().get(0).raw()))) {
              problems.add("decoded " + req);
            }
            if (req.model().equals("good")) {
              call.response().end(Buffer.buffer());
            } else {
              call.response().status(GrpcStatus.NOT_FOUND).end();
            }
          } catch (java.io.IOException e) {
            problems.add(e.toString());
            call.response().status(GrpcStatus.INVALID_ARGUMENT).end();
          }
        });
      });
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
          .requestHandler(grpc).listen().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);

      RunResult ok = runner.run(quick(server.actualPort()).protocol(Protocol.GRPC).model("good").request(template)
          .build(), ProgressListener.NONE);
      RunResult missing = runner.run(quick(server.actualPort()).protocol(Protocol.GRPC).model("other").request(template)
          .build(), ProgressListener.NONE);

      assertThat(problems).isEmpty();
      assertThat(ok.outcomes()).containsExactly(java.util.Map.entry("grpc:OK", 20L));
      assertThat(ok.errors()).isZero();
      assertThat(missing.outcomes()).containsExactly(java.util.Map.entry("grpc:NOT_FOUND", 20L));
      assertThat(missing.errors()).isEqualTo(20);
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void binaryExtensionSendsJsonHeaderThenRawBytes() {
    RequestTemplate template = RequestTemplate.generatedFp32("x", new long[] {1, 4}, 3);
    ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    try (TestServer server = TestServer.start(vertx -> req -> req.body().onSuccess(body -> {
      try {
        int headerLength = Integer.parseInt(req.getHeader("Inference-Header-Content-Length"));
        JsonNode header = JSON.readTree(body.getBytes(0, headerLength));
        JsonNode input = header.get("inputs").get(0);
        byte[] raw = body.getBytes(headerLength, body.length());
        if (!req.path().equals("/v2/models/mlp/infer") || !input.get("name").asText().equals("x")
            || !input.get("datatype").asText().equals("FP32") || input.has("data")
            || input.get("parameters").get("binary_data_size").asInt() != 16 || raw.length != 16
            || !java.util.Arrays.equals(floats(ByteBuffer.wrap(raw)), floats(template.inputs().get(0).raw()))) {
          problems.add(header + " + " + raw.length + " bytes");
        }
        req.response().end("{}");
      } catch (Exception e) {
        problems.add(e.toString());
        req.response().setStatusCode(400).end();
      }
    }))) {
      RunResult r = runner.run(quick(server.port).protocol(Protocol.HTTP_BINARY).request(template).build(),
          ProgressListener.NONE);

      assertThat(problems).isEmpty();
      assertThat(r.outcomes()).containsExactly(java.util.Map.entry("http:200", 20L));
    }
  }

  @Test
  void jsonBodyIsSentVerbatimAndStatusesAreCountedApart() {
    byte[] json = "{\"inputs\":[{\"name\":\"a\",\"shape\":[2],\"datatype\":\"INT32\",\"data\":[1,2]}]}".getBytes();
    ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    int[] n = {0};
    try (TestServer server = TestServer.start(vertx -> req -> req.body().onSuccess(body -> {
      if (!java.util.Arrays.equals(body.getBytes(), json) || !"application/json".equals(req.getHeader("content-type"))) {
        problems.add(body.toString());
      }
      req.response().setStatusCode(n[0]++ % 2 == 0 ? 200 : 503).end("{}");
    }))) {
      RunResult r = runner.run(quick(server.port).request(RequestTemplate.fromJson("a.json", json)).build(),
          ProgressListener.NONE);

      assertThat(problems).isEmpty();
      assertThat(r.outcomes()).containsOnlyKeys("http:200", "http:503");
      assertThat(r.outcomes().values().stream().mapToLong(Long::longValue).sum()).isEqualTo(20);
      assertThat(r.errors()).isEqualTo(r.outcomes().get("http:503")).isBetween(8L, 12L);
      assertThat(r.latencyMs().count()).isEqualTo(20);
    }
  }

  @Test
  void refusedConnectionsAreConnectionErrorsWithoutLatency() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    RunResult r = runner.run(quick(port).duration(Duration.ofMillis(500)).build(), ProgressListener.NONE);

    assertThat(r.requests()).isPositive();
    assertThat(r.outcomes()).containsOnlyKeys("connection_error");
    assertThat(r.errors()).isEqualTo(r.requests());
    assertThat(r.latencyMs().count()).isZero();
  }

  @Test
  void unansweredRequestsTimeOutAndCountTheirWait() {
    try (TestServer server = TestServer.start(vertx -> req -> { })) {
      RunResult r = runner.run(quick(server.port).mode(LoadMode.OPEN).rate(20).duration(Duration.ofMillis(500))
          .requestTimeout(Duration.ofMillis(300)).build(), ProgressListener.NONE);

      assertThat(r.outcomes()).containsOnlyKeys("timeout");
      assertThat(r.requests()).isBetween(8L, 11L);
      assertThat(r.latencyMs().min()).isGreaterThanOrEqualTo(299);
    }
  }
}
