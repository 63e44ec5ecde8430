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
import io.kiln.gateway.ReadinessHold;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.serve.ServeController;
import io.kiln.pipelines.Applications;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.PipelineOptions;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.graphs.Graphs;
import io.kiln.pipelines.jobs.Jobs;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.util.List;
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
 * model memory) and registers the {@code kiln.gpu.*} meters; without, neither. Every node also exports the
 * cluster's node count and each deployment's phase ({@link ClusterMeters}).
 *
 * <p><b>Ready means fast.</b> Given {@link WarmupOptions} that are {@link WarmupOptions#enabled() enabled}, the
 * node warms its serving path before it reports ready: the gateway is held not ready ({@code /v2/health/ready}
 * 503, gRPC ServerReady false, every model's readiness false) from before it binds until a {@link NodeWarmup}
 * has driven loopback OIP traffic (HTTP JSON, HTTP binary, gRPC) through the real ports to an internal,
 * node-local {@code builtin:identity} pool and torn that pool down; the model is never listed, never in
 * status, not routable afterwards, and its requests are counted in {@code kiln_warmup_requests_total}
 * only, not in the gateway's request series. When the options name the user's deployments (the node's deployment
 * file), the warm-up goes on with them ({@link ModelsWarmup}): once this node's pools of them are loaded, synthetic
 * requests built from each model's signature go through the real ports to those very pools (their engine, batch
 * sizes and response sizes; they are served through the hold while the node and the models still read not ready,
 * and counted by the pools' and the gateway's meters as any request) until the throughput is flat and the JIT
 * quiet, bounded. A warm-up that fails logs a warning and the node goes ready anyway. {@link #warmup()} completes
 * with its {@link WarmupReport}.
 *
 * <p><b>Draining.</b> {@link #drain} readies the node to leave without failing a request: its server reads not
 * ready at once (its models keep serving), the controller is told to leave the node alone, its pools report
 * themselves leaving (routers elsewhere stop sending to them; requests still reaching this gateway go to other
 * nodes' pools, or to its own when no other is left), then it waits, within a grace, until nothing is in flight or
 * queued. {@link #close} follows.
 *
 * <p>The runtime stays the caller's: {@link #close} stops what this node added and leaves the runtime
 * running (close it afterwards to leave the cluster).
 *
 * <p>Threading: {@link #start} and {@link #closeAsync} never block; {@link #close} blocks until the gateway
 * unbound, so call it from a main or shutdown thread, never from an event loop.
 */
public final class ServingNode implements AutoCloseable {

  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ServingNode.class);

  private final KilnRuntime runtime;
  private final PrometheusMeterRegistry registry;
  private final PoolLoadBoard board;
  private final PoolClient pools;
  private final ServeController serve;
  private final Pipelines pipelines;
  private final KilnGateway gateway;
  private final GpuSampler gpuSampler; // null without GPU sampling, as gpuMeters
  private final GpuMeters gpuMeters;
  private final NodeModelDirectory models;
  private final CompletableFuture<WarmupReport> warmedUp = new CompletableFuture<>();
  private volatile NodeWarmup warming; // from the warm-up's start until close
  private volatile ModelsWarmup userWarming; // likewise, where the warm-up warms the user's deployments
  private volatile NodeDrain draining; // from the drain's start on
  private volatile Jobs jobs; // set once by start, before anything else sees the node
  private volatile DashboardApi dashboard; // likewise
  private volatile ClusterMeters clusterMeters; // likewise
  private volatile NodeLogs logs; // as jobs
  private volatile Graphs graphs; // as jobs

  private ServingNode(KilnRuntime runtime, PrometheusMeterRegistry registry, PoolLoadBoard board, PoolClient pools,
                      ServeController serve, Pipelines pipelines, KilnGateway gateway, GpuSampler gpuSampler,
                      GpuMeters gpuMeters, NodeModelDirectory models) {
    this.runtime = runtime;
    this.registry = registry;
    this.board = board;
    this.pools = pools;
    this.serve = serve;
    this.pipelines = pipelines;
    this.gateway = gateway;
    this.gpuSampler = gpuSampler;
    this.gpuMeters = gpuMeters;
    this.models = models;
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
    return start(runtime, options, managementToken, kilnHome, gpus, WarmupOptions.OFF);
  }

  /**
   * {@link #start(KilnRuntime, GatewayOptions, String, Path, GpuSampling)}, warming the serving path before the
   * node reports ready when {@code warmup} is enabled (see the class comment). The stage completes once the
   * gateway listens, while the warm-up still runs: {@link #warmup()} completes when it is over and the node ready.
   */
  public static CompletionStage<ServingNode> start(KilnRuntime runtime, GatewayOptions options, String managementToken,
                                                   Path kilnHome, GpuSampling gpus, WarmupOptions warmup) {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(warmup, "warmup");
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
    // Taken before the gateway binds, so no probe ever sees the node ready before it is warm.
    ReadinessHold hold = warmup.enabled() ? gateway.holdReadiness("warming up the serving path") : null;
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
    ServingNode node = new ServingNode(runtime, registry, board, pools, serve, pipelines, gateway, sampler, gpuMeters,
        models);
    node.jobs = jobs;
    node.dashboard = dashboard;
    node.clusterMeters = ClusterMeters.register(runtime, serve, registry);
    node.logs = logs;
    node.graphs = graphs;
    return board.ready()
        .thenCompose(v -> serve.start())
        .thenCompose(v -> graphs.start())
        .thenCompose(v -> pipelines.start())
        .thenCompose(v -> jobs.start())
        .thenCompose(v -> dashboard.start())
        .thenCompose(v -> gateway.start(runtime.vertx()))
        .thenApply(v -> {
          runtime.advertise("http", Integer.toString(gateway.httpPort()));
          runtime.advertise("grpc", Integer.toString(gateway.grpcPort()));
          node.warmUp(warmup, hold, options.host(), options.tls());
          return node;
        })
        .exceptionallyCompose(err -> {
          if (hold != null) {
            hold.release();
          }
          node.warmedUp.complete(WarmupReport.off());
          return node.closeAsync().thenCompose(x -> CompletableFuture.failedFuture(err));
        });
  }

  /**
   * Starts the warm-up, if any: the internal model's, then, when the options name the user's deployments, theirs
   * ({@link ModelsWarmup}; the internal traffic is cut short once their pools here are loaded), and releases the
   * readiness hold when it is over, whatever happened.
   */
  private void warmUp(WarmupOptions options, ReadinessHold hold, String bindHost, io.kiln.gateway.TlsFiles tls) {
    if (hold == null) {
      warmedUp.complete(WarmupReport.off());
      return;
    }
    WarmupTraffic.Ports ports = new WarmupTraffic.Ports(loopback(bindHost), gateway.httpPort(), gateway.grpcPort(), tls);
    NodeWarmup w = new NodeWarmup(runtime, pools, board, models, registry, options, ports, System::nanoTime);
    ModelsWarmup m = options.deployments().isEmpty() ? null : new ModelsWarmup(runtime.vertx(), runtime.nodeId(),
        serve, board, registry, options, ports, System::nanoTime);
    warming = w;
    userWarming = m;
    // Last resort: whatever the warm-up waits on, the node goes ready at the latest this long after it began.
    long limitMs = options.duration().plus(NodeWarmup.SETUP_TIMEOUT.multipliedBy(3)).plus(ModelsWarmup.bound(options))
        .toMillis();
    long deadline = runtime.vertx().setTimer(limitMs, id -> {
      if (!warmedUp.isDone()) {
        log.warn("node {}: the start-up warm-up did not end within {} ms; reporting ready anyway", runtime.nodeId(),
            limitMs);
        w.stop();
        if (m != null) {
          m.stop();
        }
        hold.release();
        warmedUp.complete(new WarmupReport(true, w.model(), java.util.Map.of(), java.util.Map.of(),
            java.time.Duration.ofMillis(limitMs), false, "warm-up did not end within " + limitMs + " ms"));
      }
    });
    if (m != null) {
      m.loaded().thenRun(w::cutShort);
    }
    long started = System.nanoTime();
    w.run()
        .handle((report, err) -> report != null ? report
            : new WarmupReport(true, w.model(), java.util.Map.of(), java.util.Map.of(), java.time.Duration.ZERO, false,
                "warm-up failed: " + err))
        .thenCompose(report -> m == null ? CompletableFuture.completedFuture(report)
            : m.run().handle((r, err) -> withModels(report, r, err, java.time.Duration.ofNanos(System.nanoTime() - started))))
        .whenComplete((report, err) -> {
          runtime.vertx().cancelTimer(deadline);
          hold.release();
          warmedUp.complete(report != null ? report
              : new WarmupReport(true, w.model(), java.util.Map.of(), java.util.Map.of(), java.time.Duration.ZERO,
                  false, "warm-up failed: " + err));
          if (report != null && !report.models().isEmpty()) {
            log.info("node {} warmed up its deployments: {}", runtime.nodeId(), report.describe());
          }
        });
  }

  /** The internal warm-up's report with the user models' part added. */
  private static WarmupReport withModels(WarmupReport internal, ModelsWarmup.Result r, Throwable err,
                                         java.time.Duration took) {
    if (r == null) {
      return new WarmupReport(true, internal.model(), internal.answered(), internal.failed(), took, false,
          join(internal.problem(), "user model warm-up failed: " + err), List.of());
    }
    java.util.Map<WarmupReport.Protocol, Long> answered = new java.util.EnumMap<>(WarmupReport.Protocol.class);
    java.util.Map<WarmupReport.Protocol, Long> failed = new java.util.EnumMap<>(WarmupReport.Protocol.class);
    for (WarmupReport.Protocol p : WarmupReport.Protocol.values()) {
      answered.put(p, internal.answered(p) + r.answered().get(p));
      failed.put(p, internal.failed().get(p) + r.failed().get(p));
    }
    boolean traffic = r.models().stream().anyMatch(x -> x.answered() + x.failed() > 0);
    return new WarmupReport(true, internal.model(), answered, failed, took, traffic ? r.settled() : internal.settled(),
        join(internal.problem(), r.problem()), r.models());
  }

  private static String join(String a, String b) {
    return a == null ? b : b == null ? a : a + "; " + b;
  }

  /** Where this node reaches its own gateway: the bound interface, or loopback for a wildcard bind. */
  private static String loopback(String bindHost) {
    return switch (bindHost) {
      case "0.0.0.0" -> "127.0.0.1";
      case "::", "[::]", "::0" -> "::1";
      default -> bindHost;
    };
  }

  /**
   * Completes once the node's start-up warm-up is over and the node ready (at once with {@link WarmupReport#off()}
   * without one); never fails.
   */
  public CompletionStage<WarmupReport> warmup() {
    return warmedUp;
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

  /** Model graphs: stored cluster-wide, served by every node's gateway as models of their own. */
  public Graphs graphs() {
    return graphs;
  }

  /** Batch jobs: coordinated by the node they are submitted to, readable from any node. */
  public Jobs jobs() {
    return jobs;
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
   * Drains the node before it closes (see the class comment): completes once its gateway has no inference request
   * in flight and its pools nothing queued or running, at the earliest after the linger, at the latest after the
   * grace, or soon after {@link #cutDrainShort()}. Never fails; call it once, then {@link #close}. With
   * {@link DrainOptions#NONE} it completes at once and changes nothing.
   */
  public CompletionStage<DrainReport> drain(DrainOptions options) {
    Objects.requireNonNull(options, "options");
    if (!options.enabled()) {
      return CompletableFuture.completedFuture(DrainReport.none());
    }
    gateway.holdServerReadiness("draining"); // never released: close follows
    LocalPools local = new LocalPools(nodeId(), board, pools);
    NodeDrain d = new NodeDrain(runtime.vertx(), options, gateway::requestsInFlight, local::backlog);
    draining = d;
    return serve.drainThisNode()
        .exceptionally(e -> {
          log.warn("node {}: could not mark itself draining for the controller: {}", nodeId(), e.toString());
          return null;
        })
        .thenCompose(v -> local.backlog())
        .handle((b, e) -> b == null ? NodeDrain.Backlog.NONE : b)
        .thenCompose(b -> {
          log.info("node {} draining: {} request(s) in flight at the gateway, {} queued and {} running in its pools"
              + " (grace {} s)", nodeId(), gateway.requestsInFlight(), b.queued(), b.running(),
              options.grace().toMillis() / 1000.0);
          return d.run();
        })
        .thenApply(report -> {
          log.info("node {}: {}{}", nodeId(), report.describe(), report.drained() ? "" : "; closing");
          return report;
        });
  }

  /** Ends a running {@link #drain} at its next look (a second stop signal); no effect without one. */
  public void cutDrainShort() {
    NodeDrain d = draining;
    if (d != null) {
      d.cutShort();
    }
  }

  /**
   * Ends a warm-up still running (its pool is torn down first), unbinds the gateway, then stops the controller,
   * the load board and GPU sampling (its meters go; the
   * sampler service stays registered, closed, with its last snapshot); never fails (a gateway that would not
   * close cleanly is still left behind). The runtime, and so the pools on this node, keep running.
   */
  public CompletionStage<Void> closeAsync() {
    NodeWarmup w = warming;
    ModelsWarmup m = userWarming;
    CompletionStage<?> warmupOver = warmedUp;
    if (w != null) {
      w.stop(); // its traffic ends; its pool is torn down before the gateway goes
    }
    if (m != null) {
      m.stop();
    }
    return warmupOver.handle((r, e) -> null)
        .thenRun(() -> {
          if (w != null) {
            w.close();
          }
          if (m != null) {
            m.close();
          }
        })
        .thenCompose(x -> gateway.close())
        .handle((v, e) -> null)
        .thenCompose(x -> dashboard == null ? CompletableFuture.completedFuture(null)
            : dashboard.closeAsync().handle((v, e) -> null))
        .thenRun(() -> {
          if (clusterMeters != null) {
            clusterMeters.close();
          }
          serve.close();
          if (jobs != null) {
            jobs.close();
          }
          pipelines.close();
          if (graphs != null) {
            graphs.close();
          }
          board.close();
          if (logs != null) {
            logs.close();
          }
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
