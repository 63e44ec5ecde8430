package io.kiln.gateway.support;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;

/**
 * Starts one real gateway on loopback (ports 0) over a {@link FakeCluster} of three nodes ({@code node-a}
 * local, {@code node-b}, {@code node-c}) for a test class, with a real HTTP client and a real gRPC client.
 * The cluster is reset before each test.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class GatewayTestBase {

  public static final String HOST = "127.0.0.1";
  public static final int MAX_BODY = 1 << 20;
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
  private static final long WAIT_SECONDS = 30;

  protected Vertx vertx;
  protected FakeCluster cluster;
  protected KilnGateway gateway;
  protected PrometheusMeterRegistry registry;
  protected WebClient http;
  protected GrpcClient grpcClient;
  protected GRPCInferenceServiceGrpcClient grpc;

  @BeforeAll
  void startGateway() {
    vertx = Vertx.vertx();
    cluster = new FakeCluster(TestModels.all());
    cluster.addNode("node-a", true);
    cluster.addNode("node-b", false);
    cluster.addNode("node-c", false);
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    GatewayOptions options = configure(GatewayOptions.builder()
        .host(HOST).httpPort(0).grpcPort(0)
        .maxBodyBytes(MAX_BODY)
        .grpcMaxMessageBytes(MAX_BODY)
        .defaultTimeout(DEFAULT_TIMEOUT)
        .retryAfterSeconds(2)
        .registry(registry))
        .build();
    gateway = new KilnGateway(options, cluster, cluster, cluster);
    mount(gateway);
    join(gateway.start(vertx));
    http = WebClient.create(vertx);
    grpcClient = GrpcClient.client(vertx);
    grpc = GRPCInferenceServiceGrpcClient.create(grpcClient, SocketAddress.inetSocketAddress(gateway.grpcPort(), HOST));
  }

  /** The options of this class's gateway beyond the base's (an API key, say); the base's as they are by default. */
  protected GatewayOptions.Builder configure(GatewayOptions.Builder options) {
    return options;
  }

  /** Adds this class's routes to the gateway before it starts (the management APIs', say); none by default. */
  protected void mount(KilnGateway gateway) {
  }

  @BeforeEach
  void resetCluster() {
    cluster.reset();
  }

  @AfterAll
  void stopGateway() {
    if (vertx != null) {
      join(gateway.close());
      join(vertx.close());
    }
  }

  /** Waits for a future from a test thread (never an event loop). */
  public static <T> T join(Future<T> f) {
    return join(f.toCompletionStage());
  }

  /** Waits for a stage (the gateway's own start and close) from a test thread. */
  public static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("future failed or timed out: " + e, e);
    }
  }

  protected HttpResponse<Buffer> get(String path) {
    return join(http.get(gateway.httpPort(), HOST, path).send());
  }

  protected HttpResponse<Buffer> postJson(String path, String json) {
    return post(path, Buffer.buffer(json), Map.of());
  }

  protected HttpResponse<Buffer> post(String path, Buffer body, Map<String, String> headers) {
    MultiMap h = MultiMap.caseInsensitiveMultiMap();
    h.set("Content-Type", headers.containsKey("Inference-Header-Content-Length") ? "application/octet-stream" : "application/json");
    h.addAll(headers);
    return join(http.post(gateway.httpPort(), HOST, path).putHeaders(h).sendBuffer(body));
  }

  /** The outcome of one gRPC call, error or not; {@code trailers} holds all response metadata. */
  public record GrpcResult<T>(GrpcStatus status, String message, T body, MultiMap trailers) {
  }

  /** A unary gRPC call through the raw client API, so status, message and trailers can be checked. */
  protected <Q, R> GrpcResult<R> call(ServiceMethod<R, Q> method, Q request, Map<String, String> metadata,
                                      long timeoutMillis) {
    return join(grpcClient.request(SocketAddress.inetSocketAddress(gateway.grpcPort(), HOST), method).compose(req -> {
      metadata.forEach((k, v) -> req.headers().set(k, v));
      if (timeoutMillis > 0) {
        req.timeout(timeoutMillis, TimeUnit.MILLISECONDS);
      }
      req.end(request);
      return req.response().compose(resp -> {
        List<R> messages = new ArrayList<>();
        resp.handler(messages::add);
        return resp.end().transform(ar -> {
          // An error without messages is a trailers-only response: its trailers arrive as headers.
          MultiMap all = MultiMap.caseInsensitiveMultiMap().addAll(resp.headers()).addAll(resp.trailers());
          return Future.succeededFuture(new GrpcResult<>(resp.status(), resp.statusMessage(),
              messages.isEmpty() ? null : messages.get(0), all));
        });
      });
    }));
  }

  protected <Q, R> GrpcResult<R> call(ServiceMethod<R, Q> method, Q request) {
    return call(method, request, Map.of(), 0);
  }
}
