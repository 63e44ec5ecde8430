package io.kiln.gateway;

import io.kiln.gateway.impl.GatewayServers;
import io.kiln.gateway.spi.DataLocator;
import io.kiln.gateway.spi.ModelDirectory;
import io.kiln.gateway.spi.PoolDirectory;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import java.util.Objects;
import java.util.concurrent.CompletionStage;

/**
 * Kiln's front door: the Open Inference Protocol v2 over HTTP/REST (JSON and the binary tensor extension) and
 * over gRPC ({@code inference.GRPCInferenceService}), each on its own port, plus Prometheus {@code /metrics}
 * on the HTTP port. Requests are validated against the {@link ModelDirectory}, routed by locality and load
 * over the {@link PoolDirectory}, and shed with 503 + Retry-After when no pool can take them.
 *
 * <p>Readiness: the server is ready ({@code /v2/health/ready}, gRPC ServerReady) once started and while no
 * {@link ReadinessHold} is in place, whatever its models' state; with {@link GatewayOptions#strictReadiness()}
 * also only while the serving version of every model in the directory is ready. A model is ready as its
 * {@link ModelInfo} says (and while unheld); its {@code /v2/models/{m}/ready} 503 says why not.
 * Locality hints: header (gRPC metadata) {@code kiln-node}, else parameter {@code node_id}, else parameter
 * {@code data_key} resolved by the {@link DataLocator}; a hint is hard. Deadlines: the default timeout,
 * shortened by header {@code kiln-timeout-ms}, parameter {@code timeout_ms} or the gRPC deadline.
 *
 * <p>A gateway is started once; after {@link #close} (or a failed start) make a new one.
 *
 * <p>Threading: {@link #start} and {@link #close} may be called from any thread and return at once; all
 * request handling runs on Vert.x event loops and never blocks (large bodies are decoded on worker threads).
 * The SPI implementations must not block either.
 *
 * <p>Errors clients see: {@code {"error": "..."}} with 400 (bad input, naming the field), 404 (unknown model
 * or version), 413 (body over {@link GatewayOptions#maxBodyBytes()}), 503 (not ready, no pool, over capacity;
 * with Retry-After), 504 (deadline passed) and 500 only for bugs; gRPC INVALID_ARGUMENT, NOT_FOUND,
 * RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED and INTERNAL likewise.
 *
 * <p>OpenAI's API ({@code /v1/models}, {@code /v1/completions}, {@code /v1/chat/completions}, {@code /v1/embeddings})
 * is served on the HTTP port too, for the models that keep the {@link io.kiln.pools.TextModels} contract, with the same
 * statuses and OpenAI's error shape {@code {"error": {"message", "type", "param", "code"}}}; it asks for
 * {@link GatewayOptions#apiKey()} when one is set (docs/openai.md).
 */
public final class KilnGateway {

  private final GatewayServers servers;

  /**
   * @param locator maps {@code data_key} parameters to nodes; {@link DataLocator#NONE} if there is none yet
   */
  public KilnGateway(GatewayOptions options, ModelDirectory models, PoolDirectory pools, DataLocator locator) {
    this.servers = new GatewayServers(Objects.requireNonNull(options, "options"), Objects.requireNonNull(models, "models"),
        Objects.requireNonNull(pools, "pools"), Objects.requireNonNull(locator, "locator"), System::nanoTime);
  }

  /**
   * Adds routes to the HTTP server: the control plane's APIs ({@code /api/v1/}, {@code /dashboard},
   * {@code /v2/repository/}; module {@code control-plane}) are mounted this way, a route reading a body through
   * {@link RequestBodies#upTo}.
   *
   * @throws IllegalStateException once started
   */
  public KilnGateway addRoutes(java.util.function.Consumer<io.vertx.ext.web.Router> routes) {
    servers.addRoutes(Objects.requireNonNull(routes, "routes"));
    return this;
  }

  /**
   * Adds calls to the gRPC server (the control plane's repository extension calls {@code RepositoryIndex},
   * {@code RepositoryModelLoad}, {@code RepositoryModelUnload} are added this way); handlers must not block.
   *
   * @throws IllegalStateException once started
   */
  public KilnGateway addGrpcServices(java.util.function.Consumer<io.vertx.grpc.server.GrpcServer> services) {
    servers.addGrpcServices(Objects.requireNonNull(services, "services"));
    return this;
  }

  /** The streaming endpoints' limits (default {@link StreamOptions#DEFAULTS}); any time, for streams opened after. */
  /**
   * Where the gateway's {@code kiln.gateway.request} spans go (the node's span export); {@link
   * io.kiln.pools.trace.Spans#OFF}, the default, records none. Set it before {@link #start}.
   */
  public KilnGateway spans(io.kiln.pools.trace.Spans spans) {
    servers.spans(spans);
    return this;
  }

  public KilnGateway streamOptions(StreamOptions options) {
    servers.streamOptions(options);
    return this;
  }

  /**
   * Holds the gateway not ready until the hold is released (see {@link ReadinessHold}): e.g. while its node
   * warms the serving path. May be called before {@link #start}, so that the gateway is never seen ready
   * before it should be; holds may overlap.
   *
   * @param reason what the readiness endpoint reports, e.g. "warming up the serving path"
   */
  public ReadinessHold holdReadiness(String reason) {
    return servers.holdReadiness(Objects.requireNonNull(reason, "reason"));
  }

  /**
   * Holds the server not ready ({@code /v2/health/ready} 503 with {@code reason}, gRPC ServerReady false) while its
   * models stay ready and keep serving: a node draining before it shuts down, which load balancers should stop
   * sending to while the clients still on it get their answers. Release it as any {@link ReadinessHold}.
   */
  public ReadinessHold holdServerReadiness(String reason) {
    return servers.holdServerReadiness(Objects.requireNonNull(reason, "reason"));
  }

  /** Inference requests (HTTP and gRPC) received and not yet answered, now; 0 before start. */
  public int requestsInFlight() {
    return servers.requestsInFlight();
  }

  /**
   * Binds the HTTP and gRPC servers. Fails if a port is taken; on failure nothing stays bound.
   *
   * @return fails with the servers' own error, not wrapped
   * @throws IllegalStateException if already started
   */
  public CompletionStage<Void> start(Vertx vertx) {
    return servers.start(Objects.requireNonNull(vertx, "vertx")).toCompletionStage();
  }

  /** Unbinds both servers and removes the gateway's meters from the registry; idempotent. */
  public CompletionStage<Void> close() {
    return servers.close().toCompletionStage();
  }

  /** The bound HTTP port (the real one when the options said 0). */
  public int httpPort() {
    return servers.httpPort();
  }

  /** The bound gRPC port (the real one when the options said 0). */
  public int grpcPort() {
    return servers.grpcPort();
  }

  /**
   * Connections closed since start because their client did not send a whole request within
   * {@link GatewayOptions#requestReadTimeout()} (slow or stalled senders, idle keep-alive connections).
   */
  public long slowConnectionsClosed() {
    return servers.slowConnectionsClosed();
  }

  /** Certificates put in force since start because {@link GatewayOptions#tls()}'s files changed. */
  public long tlsReloads() {
    return servers.tlsReloads();
  }

  /** Changed TLS files that did not load, so the previous certificate stayed in force (each version once). */
  public long tlsRefusals() {
    return servers.tlsRefusals();
  }

  /** The registry the gateway records into and {@code /metrics} exposes. */
  public PrometheusMeterRegistry registry() {
    return servers.registry();
  }
}
