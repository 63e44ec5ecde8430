package io.kiln.deploy.e2e;

import static org.awaitility.Awaitility.await;

import io.kiln.gateway.GatewayOptions;
import io.kiln.deploy.node.ServingNode;
import io.kiln.pools.PoolStats;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * Real Kiln nodes in this JVM, assembled as {@code kiln start} assembles them ({@link ServingNode}: pools'
 * load board and client, serve controller, gateway with the management API) on one in-process
 * {@link LocalCluster}: real pool managers and workers (DJL models included), each node with its own
 * gateway on loopback (ports 0) and its own Prometheus registry. The first node started is the leader.
 */
final class ServingCluster implements AutoCloseable {

  static final String HOST = "127.0.0.1";
  static final Duration WAIT = Duration.ofSeconds(120);
  /** The gateways' default deadline: long enough that requests held in a queue outlive a test step. */
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);
  static final int RETRY_AFTER_SECONDS = 3;

  private final LocalCluster cluster = LocalCluster.create();
  private final Map<String, ServingNode> nodes = new LinkedHashMap<>();
  private final Map<String, Map<String, String>> labels = new LinkedHashMap<>();

  /** Starts serving nodes without labels, in order. */
  static ServingCluster start(String... nodeIds) {
    Map<String, Map<String, String>> nodes = new LinkedHashMap<>();
    for (String id : nodeIds) {
      nodes.put(id, Map.of());
    }
    return start(nodes);
  }

  /** Starts one serving node per entry (node id → labels), in iteration order, each advertising 2 CPUs. */
  static ServingCluster start(Map<String, Map<String, String>> nodeLabels) {
    ServingCluster c = new ServingCluster();
    try {
      boolean first = true;
      for (Map.Entry<String, Map<String, String>> n : nodeLabels.entrySet()) {
        c.startOne(n.getKey(), n.getValue(), first);
        first = false;
      }
      return c;
    } catch (RuntimeException | Error e) {
      c.close();
      throw e;
    }
  }

  private void startOne(String id, Map<String, String> nodeLabels, boolean jvmMetrics) {
    KilnRuntime rt = join(cluster.startNode(new NodeOptions(id, HOST, Resources.cpu(2), nodeLabels)));
    GatewayOptions options = GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0)
        .defaultTimeout(REQUEST_TIMEOUT).retryAfterSeconds(RETRY_AFTER_SECONDS)
        .bindJvmMetrics(jvmMetrics).build();
    labels.put(id, nodeLabels);
    nodes.put(id, join(ServingNode.start(rt, options, null)));
  }

  /**
   * Restarts a node as a rolling restart does: it drains (not ready, its pools leave, what it holds finishes),
   * stops, and a new incarnation with the same id and labels joins (its gateway on a new port).
   */
  void restart(String id) {
    ServingNode n = node(id);
    join(n.drain(io.kiln.deploy.node.DrainOptions.of(Duration.ofSeconds(60)).withLinger(Duration.ofMillis(200))));
    stop(id);
    startOne(id, labels.get(id), false);
  }

  ServingNode node(String id) {
    ServingNode n = nodes.get(id);
    if (n == null) {
      throw new IllegalArgumentException("no node " + id + " in " + nodes.keySet());
    }
    return n;
  }

  List<String> nodeIds() {
    return new ArrayList<>(nodes.keySet());
  }

  /** Applies deployment YAML through the first node; relative model paths resolve against the repository root. */
  ApplyResult deploy(String yaml) {
    return join(nodes.values().iterator().next().serve().apply(yaml, repositoryRoot().resolve("e2e.yaml"), false));
  }

  /** Waits until {@code name} is READY with {@code pools} ready pools, as every node sees it. */
  DeploymentStatus awaitReady(String name, int pools) {
    await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> nodes.values().stream().allMatch(n -> {
      DeploymentStatus s = n.serve().statuses().get(name);
      return s != null && s.phase() == DeploymentStatus.Phase.READY
          && s.pools().stream().filter(DeploymentStatus.PoolState::ready).count() == pools
          && n.board().pools(name, s.servingVersion()).stream().filter(p -> p.ready()).count() == pools;
    }));
    return nodes.values().iterator().next().serve().statuses().get(name);
  }

  /** The counts of {@code deployment}'s pool on {@code node}, asked of the pool manager itself. */
  PoolStats stats(String deployment, String version, String node) {
    return join(nodes.values().iterator().next().pools().stats(deployment, version, node));
  }

  /** Stops a node cleanly, as its shutdown does after a drain: serving parts, then its runtime leaves the cluster. */
  void stop(String id) {
    ServingNode n = nodes.remove(id);
    if (n != null) {
      n.close();
      n.runtime().close();
    }
  }

  /** Kills a node abruptly, as SIGKILL would (its gateway stops answering too). */
  void crash(String id) {
    ServingNode n = nodes.remove(id);
    if (n != null) {
      n.close();
    }
    cluster.crash(id);
  }

  @Override
  public void close() {
    for (ServingNode n : nodes.values()) {
      n.close();
    }
    nodes.clear();
    cluster.close();
  }

  static <T> T join(CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("failed or timed out: " + e, e);
    }
  }

  /** The repository root: the folder above the working directory that holds {@code models/mlp}. */
  static Path repositoryRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("models").resolve("mlp"))) {
        return p;
      }
    }
    throw new IllegalStateException("no models/mlp above " + Path.of("").toAbsolutePath());
  }
}
