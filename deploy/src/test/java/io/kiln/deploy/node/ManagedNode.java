package io.kiln.deploy.node;

import io.kiln.control.ManagementApi;
import io.kiln.control.PipelineApi;
import io.kiln.control.RepositoryApi;
import io.kiln.control.RepositoryGrpc;
import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.gateway.spi.DataLocator;
import io.kiln.pipelines.Applications;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.PipelineOptions;
import io.kiln.pipelines.Pipelines;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.ServeController;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * One Kiln node composed as {@code KilnNode} composes it (runtime on a {@link LocalCluster}, pool load board
 * and client, serve controller, pipelines with their cache in a temporary Kiln home, gateway with the
 * pipelines and management APIs mounted), on loopback with ephemeral ports, and a real HTTP client.
 */
final class ManagedNode implements AutoCloseable {

  static final Duration WAIT = Duration.ofSeconds(60);

  final LocalCluster cluster = LocalCluster.create();
  final KilnRuntime runtime;
  final PoolLoadBoard board;
  final PoolClient client;
  final ServeController serve;
  final Path home;
  final Pipelines pipelines;
  final KilnGateway gateway;
  final WebClient http;
  /** The node's one registry, as {@code ServingNode} shares it: the pools' meters and the gateway's. */
  final io.micrometer.prometheusmetrics.PrometheusMeterRegistry registry =
      new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);

  /** @param token the management token, or null for none */
  ManagedNode(String token) {
    runtime = join(cluster.startNode(new NodeOptions("node-a", "127.0.0.1", Resources.cpu(4), Map.of())));
    runtime.registerLocalService(io.micrometer.core.instrument.MeterRegistry.class, registry);
    board = new PoolLoadBoard(runtime);
    client = new PoolClient(runtime);
    serve = new ServeController(runtime, client, board, ServeController.Options.DEFAULT
        .withPeriod(Duration.ofMillis(100)).withDrainGrace(Duration.ofMillis(100)));
    PoolsDirectory port = new PoolsDirectory(runtime.nodeId(), board, client);
    gateway = new KilnGateway(GatewayOptions.builder().host("127.0.0.1").httpPort(0).grpcPort(0)
        .bindJvmMetrics(false).registry(registry).build(), new ServeModelDirectory(serve, board), port,
        DataLocator.NONE);
    try {
      home = Files.createTempDirectory("kiln-managed-node");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    pipelines = new Pipelines(runtime, PipelineOptions.defaults(home, runtime.nodeId()), DeploymentResolver.of(serve),
        client);
    gateway.addRoutes(new PipelineApi(runtime, pipelines, token)::mount);
    gateway.addRoutes(new ManagementApi(runtime, serve, new Applications(runtime, serve, pipelines), token)::mount);
    gateway.addRoutes(new RepositoryApi(runtime, serve, port, token)::mount);
    gateway.addGrpcServices(new RepositoryGrpc(runtime, serve, port, token)::register);
    join(board.ready());
    join(serve.start());
    join(pipelines.start());
    join(gateway.start(cluster.vertx()));
    http = WebClient.create(cluster.vertx());
  }

  /** Sends a request to the gateway; {@code token} null sends no Authorization header. */
  HttpResponse<Buffer> call(HttpMethod method, String uri, String token, String body) {
    HttpRequest<Buffer> req = http.request(method, gateway.httpPort(), "127.0.0.1", uri);
    if (token != null) {
      req.putHeader("Authorization", "Bearer " + token);
    }
    Future<HttpResponse<Buffer>> f = body == null ? req.send() : req.sendBuffer(Buffer.buffer(body));
    return join(f.toCompletionStage());
  }

  HttpResponse<Buffer> call(HttpMethod method, String uri, String body) {
    return call(method, uri, null, body);
  }

  static JsonObject json(HttpResponse<Buffer> r) {
    return r.bodyAsJsonObject();
  }

  static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    http.close();
    join(gateway.close());
    pipelines.close();
    serve.close();
    board.close();
    cluster.close();
    try (var files = Files.walk(home)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
