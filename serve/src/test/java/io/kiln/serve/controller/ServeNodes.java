package io.kiln.serve.controller;

import static io.kiln.runtime.testing.Await.result;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolStatus;
import io.kiln.pools.RequestContext;
import io.kiln.pools.Tensor;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Kiln nodes in one process ({@link LocalCluster}), each composed as a real node composes serving: a pool
 * load board, a pool client and a serve controller (reconciling every {@link #PERIOD} on the leader, with
 * the test's {@link TestClock}). Applies YAML, waits for statuses, and sends inference the way the
 * gateway routes it: to the deployment's serving version, on a pool the board reports ready.
 */
final class ServeNodes implements AutoCloseable {

  /** Generous for 2 loaded cores. */
  static final Duration WAIT = Duration.ofSeconds(60);
  static final Duration PERIOD = Duration.ofMillis(100);
  static final Duration DRAIN_GRACE = Duration.ofMillis(300);
  static final Resources NODE = Resources.cpu(8);
  static final Path SOURCE = Path.of("test.yaml");

  /** One node's serving parts. */
  record Node(String id, KilnRuntime runtime, PoolLoadBoard board, PoolClient client, ServeController serve) {
  }

  final LocalCluster cluster = LocalCluster.create();
  final TestClock clock = new TestClock();
  private final List<Node> nodes = new CopyOnWriteArrayList<>();
  private final AtomicInteger roundRobin = new AtomicInteger();
  private final ServeController.Unplaceable unplaceable;

  /** Starts nodes with {@link #NODE} resources and no labels, their controllers storing unplaceable deployments. */
  ServeNodes(String... ids) {
    this(ServeController.Unplaceable.WAIT, ids);
  }

  /** As {@link #ServeNodes(String...)}, the controllers treating unplaceable deployments as {@code unplaceable} says. */
  ServeNodes(ServeController.Unplaceable unplaceable, String... ids) {
    this.unplaceable = unplaceable;
    for (String id : ids) {
      start(id, NODE, Map.of());
    }
  }

  Node start(String id, Resources resources, Map<String, String> labels) {
    KilnRuntime rt = result(cluster.startNode(new NodeOptions(id, "127.0.0.1", resources, labels)));
    PoolLoadBoard board = new PoolLoadBoard(rt);
    PoolClient client = new PoolClient(rt);
    ServeController serve = new ServeController(rt, client, board, ServeController.Options.DEFAULT
        .withPeriod(PERIOD).withDrainGrace(DRAIN_GRACE).withClock(clock).withUnplaceable(unplaceable));
    result(board.ready());
    result(serve.start());
    Node n = new Node(id, rt, board, client, serve);
    nodes.add(n);
    int count = nodes.size();
    await().atMost(WAIT).until(() -> nodes().stream().allMatch(x -> x.runtime().clusterView().aliveNodes().size() == count));
    return n;
  }

  /** Kills a node as SIGKILL would: its controller and board stop with it, its actors stop answering. */
  void crash(String id) {
    Node n = node(id);
    nodes.remove(n);
    n.serve().close();
    n.board().close();
    cluster.crash(id);
  }

  Node node(String id) {
    return nodes.stream().filter(n -> n.id().equals(id)).findFirst().orElseThrow();
  }

  List<Node> nodes() {
    return List.copyOf(nodes);
  }

  Node leader() {
    return nodes().stream().filter(n -> n.runtime().isLeader()).findFirst().orElseThrow();
  }

  /** A node that does not lead (the leader when alone): what a client's gateway would be. */
  Node follower() {
    return nodes().stream().filter(n -> !n.runtime().isLeader()).findFirst().orElse(leader());
  }

  ApplyResult apply(String yaml) {
    return result(follower().serve().apply(yaml, SOURCE, false));
  }

  ApplyResult dryRun(String yaml) {
    return result(follower().serve().apply(yaml, SOURCE, true));
  }

  /** The status the leader last wrote. */
  Optional<DeploymentStatus> status(String name) {
    return Optional.ofNullable(leader().serve().statuses().get(name));
  }

  DeploymentStatus awaitPhase(String name, DeploymentStatus.Phase phase) {
    await().atMost(WAIT).until(() -> status(name).map(DeploymentStatus::phase).orElse(null) == phase);
    return status(name).orElseThrow();
  }

  /** Waits until {@code name} serves {@code version} and is READY (the version's pools all ready). */
  DeploymentStatus awaitReady(String name, String version) {
    await().atMost(WAIT).until(() -> status(name).filter(s -> s.phase() == DeploymentStatus.Phase.READY
        && version.equals(s.servingVersion()) && version.equals(s.version())).isPresent());
    return status(name).orElseThrow();
  }

  /**
   * Sends a request as a gateway on {@code via} would: to the serving version of {@code name} in that
   * node's status mirror, on a pool its board reports ready and not draining (round robin).
   */
  CompletableFuture<InferenceResponse> send(Node via, String name, InferenceRequest request) {
    Optional<String> version = via.serve().servingVersion(name);
    if (version.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException("no version of " + name + " serves"));
    }
    List<PoolLoad> ready = via.board().pools(name, version.get()).stream()
        .filter(l -> l.ready() && !l.draining()).toList();
    if (ready.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException("no ready pool of " + name + "@" + version.get()));
    }
    PoolLoad target = ready.get(Math.floorMod(roundRobin.getAndIncrement(), ready.size()));
    return via.client().infer(RequestContext.within("", 30_000), name, version.get(), target.nodeId(), request);
  }

  InferenceResponse infer(String name, InferenceRequest request) {
    return result(send(follower(), name, request), WAIT);
  }

  /** Sends directly to the pool of {@code name@version} on {@code node}, bypassing routing. */
  CompletableFuture<InferenceResponse> sendTo(String name, String version, String node, InferenceRequest request) {
    return follower().client().infer(RequestContext.within("", 60_000), name, version, node, request);
  }

  PoolStatus poolStatus(String name, String version, String node) {
    return result(follower().client().status(name, version, node));
  }

  /** Live (not DEAD) pool managers of {@code name} in the named-actor registry. */
  List<ActorInfo> managers(String name) {
    return result(follower().runtime().namedActors()).stream()
        .filter(a -> PoolManager.NAMESPACE.equals(a.namespace()) && a.name() != null && a.state() != ActorState.DEAD)
        .filter(a -> PoolNames.parse(a.name()).filter(p -> p.isManager() && p.name().equals(name)).isPresent())
        .toList();
  }

  /** Every live pool actor (manager or worker) of {@code name} in the registry. */
  List<ActorInfo> poolActors(String name) {
    return result(follower().runtime().namedActors()).stream()
        .filter(a -> PoolManager.NAMESPACE.equals(a.namespace()) && a.name() != null && a.state() != ActorState.DEAD)
        .filter(a -> PoolNames.parse(a.name()).filter(p -> p.name().equals(name)).isPresent())
        .toList();
  }

  /**
   * Live pool-manager actors of {@code name} hosted on each node, by what the nodes themselves run, not by
   * the registry: an actor that lost its registry entry still shows here.
   */
  Map<String, List<String>> hostedManagers(String name) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    for (Node n : nodes()) {
      List<String> names = n.runtime().localActors().stream()
          .filter(a -> a.state() != ActorState.DEAD && a.name() != null && PoolManager.NAMESPACE.equals(a.namespace()))
          .filter(a -> PoolNames.parse(a.name()).filter(p -> p.isManager() && p.name().equals(name)).isPresent())
          .map(ActorInfo::name).sorted().toList();
      out.put(n.id(), names);
    }
    return out;
  }

  /** A one-row request for the identity deployments of {@link #identity}: x = [seed, seed+1, seed+2, seed+3]. */
  static InferenceRequest row(int seed) {
    return InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {seed, seed + 1, seed + 2, seed + 3}));
  }

  static float[] floats(InferenceResponse r) {
    return r.outputs().get(0).asFloats();
  }

  static boolean echoes(InferenceResponse r, int seed) {
    return Arrays.equals(floats(r), new float[] {seed, seed + 1, seed + 2, seed + 3});
  }

  /**
   * A deployment of {@code builtin:identity} (input x FP32 [-1, 4], output y) whose lines after
   * {@code model:} are {@code rest} (pool, batching, autoscaling, ..., indented by 4).
   */
  static String identity(String name, String version, String rest) {
    return """
        deployments:
          - name: %s
            version: "%s"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
        """.formatted(name, version) + rest.stripIndent().indent(4);
  }

  @Override
  public void close() {
    for (Node n : nodes()) {
      n.serve().close();
      n.board().close();
    }
    cluster.close();
  }
}
