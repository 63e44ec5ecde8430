package io.kiln.deploy.node;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.gateway.management.ManagementApi;
import io.kiln.gateway.pipeline.PipelineApi;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.serve.ServeController;
import io.kiln.pipelines.Applications;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.PipelineOptions;
import io.kiln.pipelines.Pipelines;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Everything a Kiln node serves with, composed on a running runtime: one Prometheus registry (registered as
 * the node's {@link MeterRegistry} service, so the pools on this node record into it), the
 * {@link PoolLoadBoard} and {@link PoolClient}, the {@link ServeController} (reconciling while this node
 * leads), {@link Pipelines} (with this node's input cache, whose index routes {@code data_key} requests)
 * and the {@link KilnGateway} (OIP over HTTP and gRPC, {@code /metrics}, the management and pipelines APIs
 * under {@code /api/v1/}). {@code kiln up} and {@code kiln start} run one per process; tests run several on one
 * in-process cluster. Given {@link GpuSampling} (GPUs that {@code nvidia-smi} found), it also runs a
 * {@link GpuSampler} (registered as the node's {@link GpuSampler} service, so workers show their device and
 * model memory) and registers the {@code kiln.gpu.*} meters; without, neither.
 *
 * <p>The runtime stays the caller's: {@link #close} stops what this node added and leaves the runtime
 * running (close it afterwards to leave the cluster).
 *
 * <p>Threading: {@link #start} and {@link #closeAsync} never block; {@link #close} blocks until the gateway
 * unbound, so call it from a main or shutdown thread, never from an event loop.
 */
public final class ServingNode implements AutoCloseable {

  private final KilnRuntime runtime;
  private final PrometheusMeterRegistry registry;
  private final PoolLoadBoard board;
  private final PoolClient pools;
  private final ServeController serve;
  private final Pipelines pipelines;
  private final KilnGateway gateway;
  private final GpuSampler gpuSampler; // null without GPU sampling, as gpuMeters
  private final GpuMeters gpuMeters;

  private ServingNode(KilnRuntime runtime, PrometheusMeterRegistry registry, PoolLoadBoard board, PoolClient pools,
                      ServeController serve, Pipelines pipelines, KilnGateway gateway, GpuSampler gpuSampler,
                      GpuMeters gpuMeters) {
    this.runtime = runtime;
    this.registry = registry;
    this.board = board;
    this.pools = pools;
    this.serve = serve;
    this.pipelines = pipelines;
    this.gateway = gateway;
    this.gpuSampler = gpuSampler;
    this.gpuMeters = gpuMeters;
  }

  /** {@link #start(KilnRuntime, GatewayOptions, String, Path)} with Kiln's home from {@code -Dkiln.home} (or "."). */
  public static CompletionStage<ServingNode> start(KilnRuntime runtime, GatewayOptions options, String managementToken) {
    return start(runtime, options, managementToken, Path.of(System.getProperty("kiln.home", ".")));
  }

  /**
   * Composes and starts the serving parts on {@code runtime}: the load board subscribes, the controller loads
   * the desired state, the gateway binds its ports, and the node advertises them ({@code http}, {@code grpc})
   * in its node-table row.
   *
   * @param options where the gateway listens and what it admits; without a registry, the node gets a new
   *     Prometheus registry whose meters carry the tag {@code node=<nodeId>}
   * @param managementToken bearer token the management API requires, or null for none
   * @param kilnHome where the node keeps its input cache ({@code .kiln/cache/<node>}) and finds user step jars
   * @return fails if a port is taken or the desired state cannot be read; nothing stays bound then
   */
  public static CompletionStage<ServingNode> start(KilnRuntime runtime, GatewayOptions options, String managementToken,
                                                   Path kilnHome) {
    return start(runtime, options, managementToken, kilnHome, null);
  }

  /**
   * {@link #start(KilnRuntime, GatewayOptions, String, Path)}, sampling the node's GPUs when {@code gpus} is
   * given: the sampler starts (its first sample at once, on a thread of its own) before anything serves.
   *
   * @param gpus null for a node without GPUs found by {@code nvidia-smi}: no GPU meters, no sampler
   */
  public static CompletionStage<ServingNode> start(KilnRuntime runtime, GatewayOptions options, String managementToken,
                                                   Path kilnHome, GpuSampling gpus) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(options, "options");
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
    ServeController serve = new ServeController(runtime, pools, board);
    Pipelines pipelines = new Pipelines(runtime, PipelineOptions.defaults(kilnHome, runtime.nodeId()),
        DeploymentResolver.of(serve), pools);
    KilnGateway gateway = new KilnGateway(options.toBuilder().registry(registry).build(), new ServeModelDirectory(serve),
        new PoolsDirectory(runtime.nodeId(), board, pools), pipelines.cacheIndex()::nodeFor);
    gateway.addRoutes(new PipelineApi(runtime, pipelines, managementToken)::mount);
    gateway.addRoutes(new ManagementApi(runtime, serve, new Applications(runtime, serve, pipelines),
        managementToken)::mount);
    ServingNode node = new ServingNode(runtime, registry, board, pools, serve, pipelines, gateway, sampler, gpuMeters);
    return board.ready()
        .thenCompose(v -> serve.start())
        .thenCompose(v -> pipelines.start())
        .thenCompose(v -> gateway.start(runtime.vertx()))
        .thenApply(v -> {
          runtime.advertise("http", Integer.toString(gateway.httpPort()));
          runtime.advertise("grpc", Integer.toString(gateway.grpcPort()));
          return node;
        })
        .exceptionallyCompose(err -> node.closeAsync().thenCompose(x -> CompletableFuture.failedFuture(err)));
  }

  public KilnRuntime runtime() {
    return runtime;
  }

  public String nodeId() {
    return runtime.nodeId();
  }

  /** The registry {@code /metrics} exposes: gateway, pool and JVM meters of this node. */
  public PrometheusMeterRegistry registry() {
    return registry;
  }

  public PoolLoadBoard board() {
    return board;
  }

  public PoolClient pools() {
    return pools;
  }

  public ServeController serve() {
    return serve;
  }

  public KilnGateway gateway() {
    return gateway;
  }

  public Pipelines pipelines() {
    return pipelines;
  }

  /** The bound HTTP port. */
  public int httpPort() {
    return gateway.httpPort();
  }

  /** The bound gRPC port. */
  public int grpcPort() {
    return gateway.grpcPort();
  }

  /**
   * Unbinds the gateway, then stops the controller, the load board and GPU sampling (its meters go; the
   * sampler service stays registered, closed, with its last snapshot); never fails (a gateway that would not
   * close cleanly is still left behind). The runtime, and so the pools on this node, keep running.
   */
  public CompletionStage<Void> closeAsync() {
    return gateway.close()
        .handle((v, e) -> null)
        .thenRun(() -> {
          serve.close();
          pipelines.close();
          board.close();
          if (gpuSampler != null) {
            gpuMeters.close();
            gpuSampler.close();
          }
        });
  }

  /** Blocking {@link #closeAsync()}. */
  @Override
  public void close() {
    closeAsync().toCompletableFuture().join();
  }
}
