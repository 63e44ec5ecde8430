package io.kiln.deploy.node;

import io.kiln.control.DashboardApi;
import io.kiln.control.JobApi;
import io.kiln.control.LogsApi;
import io.kiln.control.ManagementApi;
import io.kiln.control.PipelineApi;
import io.kiln.control.RepositoryApi;
import io.kiln.control.RepositoryGrpc;
import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.pipelines.Applications;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.PipelineOptions;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.graphs.Graphs;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.serve.ServeController;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The serving parts of one node, wired once on a running runtime ({@link #wire}), started in the order each needs
 * the one before ({@link #start}) and stopped in the order {@link ServingNode#closeAsync} promises
 * ({@link #closeAfter}). What the parts do with each other is decided here only; {@link ServingNode} is the node's
 * public face and its warm-up and drain.
 *
 * @param gpuSampler null without GPU sampling, as {@code gpuMeters}
 */
record NodeAssembly(KilnRuntime runtime, PrometheusMeterRegistry registry, GpuSampler gpuSampler, GpuMeters gpuMeters,
                    PoolLoadBoard board, PoolClient pools, ServeController serve, Pipelines pipelines, Graphs graphs,
                    NodeModelDirectory models, KilnGateway gateway, Jobs jobs, DashboardApi dashboard, NodeLogs logs,
                    ClusterMeters clusterMeters) {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ServingNode.class);

  /**
   * Builds every part and mounts the control plane's APIs on the gateway; binds nothing and starts nothing but the GPU
   * sampler (its first sample at once, on a thread of its own, before anything serves). Registers the node's
   * {@link MeterRegistry} and, with {@code gpus}, its {@link GpuSampler} as the runtime's local services. Blocks
   * only as long as the parts' constructors; throws what they throw.
   *
   * @param options without a registry, the node gets a new Prometheus registry tagged {@code node=<nodeId>}
   * @param gpus null for a node without GPUs found by {@code nvidia-smi}: no GPU meters, no sampler
   */
  static NodeAssembly wire(KilnRuntime runtime, GatewayOptions options, String managementToken, Path kilnHome,
                           GpuSampling gpus) {
    PrometheusMeterRegistry registry = options.registry();
    if (registry == null) {
      registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      registry.config().commonTags("node", runtime.nodeId());
    }
    runtime.registerLocalService(MeterRegistry.class, registry);
    GpuSampler sampler = null;
    GpuMeters gpuMeters = null;
    if (gpus != null) {
      sampler = new GpuSampler(gpus.sampler());
      gpuMeters = GpuMeters.register(registry, sampler, gpus.devices(), runtime.nodeId());
      runtime.registerLocalService(GpuSampler.class, sampler);
      sampler.start();
    }
    PoolLoadBoard board = new PoolLoadBoard(runtime);
    PoolClient pools = new PoolClient(runtime);
    // A deployment no node could ever host is refused at apply, not stored to wait (unless it says it waits).
    ServeController serve = new ServeController(runtime, pools, board,
        ServeController.Options.DEFAULT.withUnplaceable(ServeController.Unplaceable.REFUSE));
    Pipelines pipelines = new Pipelines(runtime, PipelineOptions.defaults(kilnHome, runtime.nodeId()),
        DeploymentResolver.of(serve), pools);
    // Model graphs read to the gateway as models of their own, whose steps run on one node's pools.
    Graphs graphs = new Graphs(runtime, serve::servingVersion, board, pools);
    GraphModelDirectory served = new GraphModelDirectory(new ServeModelDirectory(serve, board), graphs);
    NodeModelDirectory models = new NodeModelDirectory(served);
    // The gateway's one port to the pools: inference, the repository APIs and the dashboard all go through it.
    PoolsDirectory poolPort = new PoolsDirectory(runtime.nodeId(), board, pools, graphs, served::isGraph);
    KilnGateway gateway = new KilnGateway(options.toBuilder().registry(registry).build(), models, poolPort,
        pipelines.cacheIndex()::nodeFor);
    gateway.addRoutes(new PipelineApi(runtime, pipelines, managementToken)::mount);
    Jobs jobs = new Jobs(runtime, pipelines, DeploymentResolver.of(serve), board);
    gateway.addRoutes(new JobApi(runtime, jobs, managementToken)::mount);
    gateway.addRoutes(new RepositoryApi(runtime, serve, poolPort, managementToken)::mount);
    gateway.addGrpcServices(new RepositoryGrpc(runtime, serve, poolPort, managementToken)::register);
    DashboardApi dashboard = new DashboardApi(runtime, serve, poolPort, pipelines, jobs, registry, managementToken);
    gateway.addRoutes(dashboard::mount); // before the management API, which takes the rest of /api/v1/
    NodeLogs logs = new NodeLogs(runtime, io.kiln.deploy.logging.KilnLogging::lines);
    gateway.addRoutes(new LogsApi(runtime.vertx(), logs, managementToken)::mount);
    gateway.spans(runtime.localService(io.kiln.pools.trace.Spans.class).orElse(io.kiln.pools.trace.Spans.OFF));
    gateway.addRoutes(new ManagementApi(runtime, serve, new Applications(runtime, serve, pipelines),
        managementToken)::mount);
    ClusterMeters clusterMeters = ClusterMeters.register(runtime, serve, registry);
    return new NodeAssembly(runtime, registry, sampler, gpuMeters, board, pools, serve, pipelines, graphs, models,
        gateway, jobs, dashboard, logs, clusterMeters);
  }

  /**
   * The load board subscribes, the controller loads the desired state, graphs, pipelines, jobs and the dashboard
   * start, the gateway binds its ports, and the node advertises them ({@code http}, {@code grpc}) in its node-table
   * row. Never blocks.
   *
   * @return fails with the first part's error (a port taken, a desired state that cannot be read); what started
   *     stays started until {@link #closeAfter}
   */
  CompletionStage<Void> start() {
    return board.ready()
        .thenCompose(v -> serve.start())
        .thenCompose(v -> graphs.start())
        .thenCompose(v -> pipelines.start())
        .thenCompose(v -> jobs.start())
        .thenCompose(v -> dashboard.start())
        .thenCompose(v -> gateway.start(runtime.vertx()))
        .thenRun(() -> {
          runtime.advertise("http", Integer.toString(gateway.httpPort()));
          runtime.advertise("grpc", Integer.toString(gateway.grpcPort()));
        });
  }

  /**
   * Once {@code first} has completed, normally or not (a failure is logged), unbinds the gateway; then, whether or not
   * the gateway failed, closes the dashboard and stops the cluster meters, the controller, jobs, pipelines,
   * graphs, the load board, the log source and GPU sampling (its meters go; the sampler service stays registered,
   * closed, with its last snapshot). Never fails, never blocks; the runtime and the pools on it keep running.
   *
   * @param first what must be over while the gateway still answers (the warm-up tears its pool down through it)
   */
  CompletionStage<Void> closeAfter(CompletionStage<?> first) {
    return first
        .handle((x, e) -> {
          if (e != null) { // the warm-up's teardown failed: the node still closes, its port first
            LOG.warn("closing node {}: what had to end before the gateway failed; closing the rest anyway",
                runtime.nodeId(), e);
          }
          return null;
        })
        .thenCompose(x -> gateway.close())
        .handle((v, e) -> null)
        .thenCompose(x -> dashboard.closeAsync().handle((v, e) -> null))
        .thenRun(() -> {
          clusterMeters.close();
          serve.close();
          jobs.close();
          pipelines.close();
          graphs.close();
          board.close();
          logs.close();
          if (gpuSampler != null) {
            gpuMeters.close();
            gpuSampler.close();
          }
        });
  }
}
