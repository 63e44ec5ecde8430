package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.WarmupReport.Protocol;
import io.kiln.gateway.GatewayOptions;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ServerReadyRequest;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.testkit.Deployment;
import io.kiln.testkit.OipRequest;
import io.micrometer.core.instrument.Counter;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.grpc.client.GrpcClient;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * "Ready means fast": an assembled node warms its serving path through its own HTTP and gRPC ports before it
 * reports ready, its warm-up model never shows afterwards, a warm-up of 0 is none, and a failing warm-up
 * still lets the node go ready, with a warning.
 */
@Tag("slow")
class NodeWarmupTest {

  private static final String HOST = "127.0.0.1";
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir
  Path home;

  private LocalCluster cluster;
  private KilnRuntime runtime;
  private WebClient http;
  private GrpcClient grpcClient;
  private ServingNode node;

  @BeforeEach
  void startRuntime() {
    cluster = LocalCluster.create();
    runtime = ManagedNode.join(cluster.startNode(new NodeOptions("node-a", HOST, Resources.cpu(4), Map.of())));
    http = WebClient.create(cluster.vertx());
    grpcClient = GrpcClient.client(cluster.vertx());
  }

  @AfterEach
  void stop() {
    if (node != null) {
      node.close();
    }
    http.close();
    ManagedNode.join(grpcClient.close().toCompletionStage());
    cluster.close();
  }

  private ServingNode start(WarmupOptions warmup) {
    GatewayOptions options = GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0).bindJvmMetrics(false).build();
    node = ManagedNode.join(ServingNode.start(runtime, options, null, home, null, warmup));
    return node;
  }

  private HttpResponse<Buffer> get(String path) {
    return ManagedNode.join(http.get(node.httpPort(), HOST, path).send().toCompletionStage());
  }

  private HttpResponse<Buffer> post(String path, String json) {
    return ManagedNode.join(http.post(node.httpPort(), HOST, path).putHeader("Content-Type", "application/json")
        .sendBuffer(Buffer.buffer(json)).toCompletionStage());
  }

  private GRPCInferenceServiceGrpcClient grpc() {
    return GRPCInferenceServiceGrpcClient.create(grpcClient, SocketAddress.inetSocketAddress(node.grpcPort(), HOST));
  }

  private Map<Protocol, Long> warmupMeter(String outcome) {
    Map<Protocol, Long> out = new EnumMap<>(Protocol.class);
    for (Protocol p : Protocol.values()) {
      Counter c = node.registry().find("kiln.warmup.requests").tag("protocol", p.tag()).tag("outcome", outcome)
          .counter();
      out.put(p, c == null ? 0 : (long) c.count());
    }
    return out;
  }

  private List<ActorInfo> actorsOf(String model) {
    return ManagedNode.join(runtime.namedActors()).stream().filter(a -> a.name() != null && a.name().contains(model))
        .toList();
  }

  @Test
  void theNodeReportsReadyOnlyOnceItsServingPathIsWarm() {
    start(WarmupOptions.of(Duration.ofMillis(1500)));

    // The hold is taken before the gateway binds: the very first probe finds the node warming.
    HttpResponse<Buffer> first = get("/v2/health/ready");
    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(first.bodyAsJsonObject().getString("error")).isEqualTo("server not ready: warming up the serving path");
    assertThat(ManagedNode.join(grpc().serverReady(ServerReadyRequest.getDefaultInstance()).toCompletionStage())
        .getReady()).isFalse();

    AtomicReference<Map<Protocol, Long>> atReady = new AtomicReference<>();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
      if (get("/v2/health/ready").statusCode() != 200) {
        return false;
      }
      atReady.set(warmupMeter("ok"));
      return true;
    });

    WarmupReport report = ManagedNode.join(node.warmup());
    assertThat(report.warmed()).as(report.describe()).isTrue();
    for (Protocol p : Protocol.values()) {
      assertThat(atReady.get().get(p)).as("%s requests answered when the node first said ready", p).isPositive();
    }
    assertThat(atReady.get()).isEqualTo(report.answered());
    assertThat(warmupMeter("failed").values()).containsOnly(0L);

    // None of the warm-up's requests is in the user-facing request series; its own counter has them all.
    String metrics = get("/metrics").bodyAsString();
    assertThat(metrics).doesNotContain("kiln_gateway_requests_total").doesNotContain("kiln_gateway_routes_total")
        .contains("kiln_warmup_requests_total{");

    // The warm-up model is gone: not routable, not among the actors, not in status, nowhere in /metrics.
    String model = report.model();
    assertThat(model).startsWith("_warmup-");
    assertThat(get("/v2/models/" + model + "/ready").statusCode()).isEqualTo(404);
    assertThat(post("/v2/models/" + model + "/infer", "{\"inputs\":[]}").statusCode()).isEqualTo(404);
    ModelInferRequest grpcInfer = ModelInferRequest.newBuilder().setModelName(model).build();
    assertThat(grpc().modelInfer(grpcInfer).toCompletionStage().toCompletableFuture())
        .failsWithin(WAIT).withThrowableThat().withMessageContaining("NOT_FOUND");
    await().atMost(WAIT).until(() -> actorsOf(model).isEmpty());
    JsonObject status = get("/api/v1/status").bodyAsJsonObject();
    assertThat(status.getJsonArray("deployments")).isEmpty();
    assertThat(status.getJsonArray("actors").encode()).doesNotContain(model);
    assertThat(get("/metrics").bodyAsString()).doesNotContain(model);

    // And the node serves its users as ever, metered as ever.
    ManagedNode.join(node.serve().apply(Deployment.file(Deployment.identity("echo").pool("{workers_per_node: 1}")),
        home.resolve("echo.yaml"), false));
    await().atMost(WAIT).until(() -> get("/v2/models/echo/ready").statusCode() == 200);
    HttpResponse<Buffer> echoed = post("/v2/models/echo/infer",
        OipRequest.fp32("x", new long[] {1, 2}, 1f, 2f).json());
    assertThat(echoed.statusCode()).isEqualTo(200);
    assertThat(get("/metrics").bodyAsString()).contains("kiln_gateway_requests_total{").contains("model=\"echo\"");
  }

  @Test
  void aWarmupOfZeroIsNone() {
    start(WarmupOptions.of(Duration.ZERO));

    assertThat(get("/v2/health/ready").statusCode()).isEqualTo(200);
    WarmupReport report = ManagedNode.join(node.warmup());
    assertThat(report.ran()).isFalse();
    assertThat(report.totalAnswered()).isZero();
    assertThat(node.registry().find("kiln.warmup.requests").counters()).isEmpty();
    assertThat(ManagedNode.join(runtime.namedActors())).isEmpty();
  }

  @Test
  void aFailingWarmupStillLetsTheNodeStartWithAWarning() throws IOException {
    Path missing = Files.createDirectories(home.resolve("no-model-here"));
    ModelSpec broken = ModelSpec.builder().uri(missing.toString()).engine(ModelSpec.ENGINE_PYTORCH)
        .input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 64).build();
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream err = System.err;
    System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
    WarmupReport report;
    try {
      start(WarmupOptions.of(Duration.ofSeconds(1)).withModel(broken));
      await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> get("/v2/health/ready").statusCode() == 200);
      report = ManagedNode.join(node.warmup());
    } finally {
      System.setErr(err);
    }

    assertThat(report.ran()).isTrue();
    assertThat(report.warmed()).isFalse();
    assertThat(report.problem()).startsWith("warm-up failed: no worker of the warm-up pool started")
        .contains(missing.toString());
    assertThat(report.totalAnswered()).isZero();
    assertThat(log.toString(StandardCharsets.UTF_8)).contains("WARN", "goes ready without a full warm-up",
        "no worker of the warm-up pool started");
    await().atMost(WAIT).until(() -> actorsOf(report.model()).isEmpty());
  }

  @Test
  void aHealthyWarmUpLogsNoError() {
    // Vert.x reports what went wrong on an event loop (e.g. "Unhandled exception") through its loggers: a user
    // reads an ERROR on a healthy start as a broken node. The warm-up's clients linger after it (idle connections
    // for the first requests), so the watch lasts past every request timer the warm-up could have left (10 s).
    ch.qos.logback.classic.Logger root = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
        .getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> events =
        new ch.qos.logback.core.read.ListAppender<>();
    events.start();
    root.addAppender(events);
    java.util.function.Predicate<ch.qos.logback.classic.spi.ILoggingEvent> error =
        e -> e.getLevel().isGreaterOrEqual(ch.qos.logback.classic.Level.ERROR);
    try {
      start(WarmupOptions.of(Duration.ofSeconds(3)));
      WarmupReport report = ManagedNode.join(node.warmup());
      assertThat(report.totalAnswered()).as(report.describe()).isPositive();
      await().during(Duration.ofSeconds(11)).atMost(Duration.ofSeconds(20))
          .until(() -> events.list.stream().noneMatch(error));
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      // reported below, with the lines
    } finally {
      root.detachAppender(events);
    }
    assertThat(List.copyOf(events.list)).filteredOn(error)
        .extracting(e -> e.getLoggerName() + ": " + e.getFormattedMessage()
            + (e.getThrowableProxy() == null ? "" : " " + e.getThrowableProxy().getMessage()))
        .isEmpty();
  }
}
