package io.kiln.deploy;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.gateway.management.ManagementApi;
import io.kiln.gateway.serving.PoolsDirectory;
import io.kiln.gateway.serving.ServeModelDirectory;
import io.kiln.gateway.pipeline.PipelineApi;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.serve.ServeController;
import io.kiln.serve.pipeline.DeploymentResolver;
import io.kiln.serve.pipeline.PipelineOptions;
import io.kiln.serve.pipeline.Pipelines;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Kiln node: the runtime (single-node or clustered), the pool load board and client, the serve
 * controller (reconciling when this node leads), pipelines (with this node's input cache, whose index
 * routes {@code data_key} requests) and the gateway (OIP over HTTP and gRPC, {@code /metrics}, the
 * management and pipelines APIs), sharing one Prometheus registry.
 */
public final class KilnNode implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(KilnNode.class);

  /**
   * How to start a node.
   *
   * @param cluster null for a single-node, in-process cluster ({@code kiln up})
   * @param token management token, or null for none
   */
  public record Options(NodeOptions node, ClusterOptions cluster, int httpPort, int grpcPort, String token,
                        Duration requestTimeout) {
  }

  private final KilnRuntime runtime;
  private final PoolLoadBoard board;
  private final ServeController serve;
  private final Pipelines pipelines;
  private final KilnGateway gateway;

  private KilnNode(KilnRuntime runtime, PoolLoadBoard board, ServeController serve, Pipelines pipelines,
                   KilnGateway gateway) {
    this.runtime = runtime;
    this.board = board;
    this.serve = serve;
    this.pipelines = pipelines;
    this.gateway = gateway;
  }

  public static CompletionStage<KilnNode> start(Options o) {
    CompletionStage<KilnRuntime> rt = o.cluster() == null ? LocalCluster.singleNode(o.node())
        : KilnCluster.join(o.node(), o.cluster());
    return rt.thenCompose(runtime -> {
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      registry.config().commonTags("node", runtime.nodeId());
      runtime.registerLocalService(MeterRegistry.class, registry);
      PoolLoadBoard board = new PoolLoadBoard(runtime);
      PoolClient client = new PoolClient(runtime);
      ServeController serve = new ServeController(runtime, client, board);
      Path home = Path.of(System.getProperty("kiln.home", "."));
      Pipelines pipelines = new Pipelines(runtime, PipelineOptions.defaults(home, runtime.nodeId()),
          DeploymentResolver.of(serve), client);
      GatewayOptions options = GatewayOptions.builder().host(o.node().host()).httpPort(o.httpPort())
          .grpcPort(o.grpcPort()).registry(registry).defaultTimeout(o.requestTimeout()).build();
      KilnGateway gateway = new KilnGateway(options, new ServeModelDirectory(serve),
          new PoolsDirectory(runtime.nodeId(), board, client), pipelines.cacheIndex()::nodeFor);
      // Before the management API: it validates and stores the pipelines of a deployment file first.
      gateway.addRoutes(new PipelineApi(runtime, pipelines, () -> serve.desired().keySet(), o.token())::mount);
      gateway.addRoutes(new ManagementApi(runtime, serve, o.token())::mount);
      KilnNode node = new KilnNode(runtime, board, serve, pipelines, gateway);
      return board.ready()
          .thenCompose(v -> serve.start())
          .thenCompose(v -> pipelines.start())
          .thenCompose(v -> gateway.start(runtime.vertx()).toCompletionStage())
          .thenApply(v -> {
            runtime.advertise("http", Integer.toString(gateway.httpPort()));
            runtime.advertise("grpc", Integer.toString(gateway.grpcPort()));
            LOG.info("node {} serving: HTTP {}:{} gRPC {}:{}", runtime.nodeId(), o.node().host(), gateway.httpPort(),
                o.node().host(), gateway.grpcPort());
            return node;
          })
          .exceptionallyCompose(err -> {
            node.close();
            return java.util.concurrent.CompletableFuture.failedFuture(err);
          });
    });
  }

  public KilnRuntime runtime() {
    return runtime;
  }

  public ServeController serve() {
    return serve;
  }

  public Pipelines pipelines() {
    return pipelines;
  }

  public int httpPort() {
    return gateway.httpPort();
  }

  public int grpcPort() {
    return gateway.grpcPort();
  }

  /** Stops the gateway, the controller and the runtime (whose actors die and whose names are freed). */
  @Override
  public void close() {
    Future<Void> g = gateway.close();
    g.toCompletionStage().toCompletableFuture().handle((v, e) -> null).join();
    serve.close();
    pipelines.close();
    board.close();
    runtime.close();
  }
}
