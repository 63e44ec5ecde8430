package io.kiln.deploy.node;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.graphs.Graphs;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.serve.ServeController;
import io.micrometer.core.instrument.MeterRegistry;
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
 * <p>This class is the node's lifecycle; {@link NodeAssembly} wires the parts and holds their start and stop order,
 * {@link StartupWarmup} runs the warm-up.
 *
 * <p>Threading: {@link #start} and {@link #closeAsync} never block; {@link #close} blocks until the gateway
 * unbound, so call it from a main or shutdown thread, never from an event loop.
 */
public final class ServingNode implements AutoCloseable {

  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ServingNode.class);

  private final NodeAssembly parts;
  private final StartupWarmup startupWarmup;
  private volatile NodeDrain draining; // from the drain's start on

  /** The node's parts, for this package's tests. */
  NodeAssembly parts() {
    return parts;
  }

  private ServingNode(NodeAssembly parts, StartupWarmup startupWarmup) {
    this.parts = parts;
    this.startupWarmup = startupWarmup;
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
    NodeAssembly parts = NodeAssembly.wire(runtime, options, managementToken, kilnHome, gpus);
    StartupWarmup warming = new StartupWarmup(parts, warmup); // holds readiness, if on, before the gateway binds
    ServingNode node = new ServingNode(parts, warming);
    return parts.start()
        .thenApply(v -> {
          warming.begin(options.host(), options.tls());
          return node;
        })
        .exceptionallyCompose(err -> {
          warming.skip();
          return node.closeAsync().thenCompose(x -> CompletableFuture.failedFuture(err));
        });
  }

  /**
   * Completes once the node's start-up warm-up is over and the node ready (at once with {@link WarmupReport#off()}
   * without one); never fails.
   */
  public CompletionStage<WarmupReport> warmup() {
    return startupWarmup.report();
  }

  public KilnRuntime runtime() {
    return parts.runtime();
  }

  public String nodeId() {
    return parts.runtime().nodeId();
  }

  /** The registry {@code /metrics} exposes: gateway, pool and JVM meters of this node. */
  public PrometheusMeterRegistry registry() {
    return parts.registry();
  }

  public PoolLoadBoard board() {
    return parts.board();
  }

  public PoolClient pools() {
    return parts.pools();
  }

  public ServeController serve() {
    return parts.serve();
  }

  public KilnGateway gateway() {
    return parts.gateway();
  }

  public Pipelines pipelines() {
    return parts.pipelines();
  }

  /** Model graphs: stored cluster-wide, served by every node's gateway as models of their own. */
  public Graphs graphs() {
    return parts.graphs();
  }

  /** Batch jobs: coordinated by the node they are submitted to, readable from any node. */
  public Jobs jobs() {
    return parts.jobs();
  }

  /** The bound HTTP port. */
  public int httpPort() {
    return parts.gateway().httpPort();
  }

  /** The bound gRPC port. */
  public int grpcPort() {
    return parts.gateway().grpcPort();
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
    KilnGateway gateway = parts.gateway();
    gateway.holdServerReadiness("draining"); // never released: close follows
    LocalPools local = new LocalPools(nodeId(), parts.board(), parts.pools());
    NodeDrain d = new NodeDrain(parts.runtime().vertx(), options, gateway::requestsInFlight, local::backlog);
    draining = d;
    return parts.serve().drainThisNode()
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
    return parts.closeAfter(startupWarmup.stop());
  }

  /** Blocking {@link #closeAsync()}. */
  @Override
  public void close() {
    closeAsync().toCompletableFuture().join();
  }
}
