package io.kiln.pipelines.graphs;

import io.kiln.pipelines.InferTarget;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.pools.RequestContext;
import io.kiln.pools.ValidatedRequest;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SharedStore;
import io.kiln.serve.GraphSpec;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Model graphs on one node (see {@link GraphSpec}, docs/graphs.md): every node runs one. Graphs are stored
 * cluster-wide ({@value #STORE}, by {@link #apply}: the deployment file's one apply operation,
 * {@link io.kiln.pipelines.Applications}) and mirrored on every node, so a gateway looks one up without a round trip.
 * {@link #infer} runs a request through a graph's steps, each a normal request to its deployment's pool ({@link PoolClient}),
 * all on one node: the one asked for when it runs a pool of every step (the node that received the request, or the
 * one the gateway's router chose), else the least loaded node that does. Concurrent requests meet in each step's pool
 * and are batched there as any requests are. Registered as a node-local service on {@link #start} (infer steps of
 * pipelines find it there).
 *
 * <p><b>Errors</b> of {@link #infer} are {@link InferenceException}s: NOT_FOUND (no such graph), INVALID_INPUT (the
 * request does not fit the graph's inputs), UNAVAILABLE (a step's deployment has no ready version, no node runs a
 * pool of every step, or the request was cancelled), DEADLINE_EXCEEDED; a failing step fails the request with its
 * failure's kind and a message naming the step, its deployment and version, and the node.
 *
 * <p><b>Meters</b> (the node's {@link MeterRegistry} service): {@code kiln_graph_requests_total{graph,outcome}},
 * {@code kiln_graph_duration_seconds{graph}}, {@code kiln_graph_step_duration_seconds{graph,step,deployment}},
 * {@code kiln_graph_requests_in_flight{graph}}; each step's pool meters its requests as usual.
 *
 * <p><b>Threading:</b> thread-safe and non-blocking; futures complete on the pools' reply threads.
 */
public final class Graphs implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(Graphs.class);

  /** The cluster's store of graphs, by name. */
  public static final String STORE = "kiln.graphs";

  private final KilnRuntime runtime;
  private final PoolClient pools;
  private final GraphNodes nodes;
  private final MeterRegistry registry;
  private final SharedStore<GraphSpec> store;
  private final Map<String, GraphSpec> mirror = new ConcurrentHashMap<>();
  /** Per graph, what its requests need, made again only when the graph's spec is replaced. */
  private final Map<String, GraphRun.Plan> plans = new ConcurrentHashMap<>();
  private final Map<String, GraphMeters> meters = new ConcurrentHashMap<>();
  private volatile String listener;

  /**
   * @param servingVersion the version a deployment serves now, if any ({@code ServeController::servingVersion}:
   *     read on every request, so it must answer from memory)
   * @param board where pools report their load: which nodes run a pool of every step
   * @param pools the node's pool client, through which steps are sent
   */
  public Graphs(KilnRuntime runtime, java.util.function.Function<String, Optional<String>> servingVersion,
                PoolLoadBoard board, PoolClient pools) {
    this.runtime = runtime;
    this.pools = pools;
    this.nodes = new GraphNodes(servingVersion, board);
    this.registry = runtime.localService(MeterRegistry.class).orElseGet(SimpleMeterRegistry::new);
    this.store = runtime.store(STORE, GraphSpec.class);
  }

  /** Loads the stored graphs into this node's mirror, follows their changes, and registers this node's service. */
  public CompletionStage<Void> start() {
    listener = store.addListener((name, entry) -> {
      if (entry == null) {
        mirror.remove(name);
      } else if (entry.readable()) {
        mirror.put(name, entry.value());
      } else {
        LOG.warn("graph '{}' in {} does not read; keeping what this node had: {}", name, STORE, entry);
      }
    });
    return store.entries().thenAccept(all -> all.forEach((name, entry) -> {
      if (entry.readable()) {
        mirror.putIfAbsent(name, entry.value()); // a change heard meanwhile is newer
      }
    })).thenRun(() -> runtime.registerLocalService(Graphs.class, this));
  }

  /** Stores graphs cluster-wide, replacing those of the same names; requests already running keep their spec. */
  public CompletionStage<Void> apply(List<GraphSpec> specs) {
    return Futures.allOf(specs.stream().map(g -> store.put(g.name(), g).thenRun(() -> mirror.put(g.name(), g)))
        .toList());
  }

  /** Removes a graph (its requests in progress finish); false if there was none. */
  public CompletionStage<Boolean> delete(String name) {
    return store.get(name).thenCompose(e -> e.isEmpty() ? CompletableFuture.completedFuture(false)
        : store.remove(name, e.get()).thenApply(removed -> {
          if (removed) {
            mirror.remove(name);
          }
          return removed;
        }));
  }

  /** The graph of that name as this node's mirror holds it. */
  public Optional<GraphSpec> graph(String name) {
    return name == null ? Optional.empty() : Optional.ofNullable(mirror.get(name));
  }

  /** Every graph this node knows, by name. */
  public Map<String, GraphSpec> graphs() {
    return new TreeMap<>(mirror);
  }

  public Set<String> names() {
    return new TreeSet<>(mirror.keySet());
  }

  /** What a pipeline's infer step calls for a graph: its name, version and inputs (to decode a cached file). */
  public Optional<InferTarget> target(String name) {
    return graph(name).map(g -> new InferTarget(g.name(), g.version(), g.inputs()));
  }

  /** The nodes that run a pool of every deployment of the graph's steps (at their serving versions); empty if none. */
  public List<GraphNode> nodes(String name) {
    GraphSpec g = mirror.get(name);
    if (g == null) {
      return List.of();
    }
    try {
      return nodes.nodes(g, nodes.versions(g));
    } catch (InferenceException noVersion) {
      return List.of();
    }
  }

  /** Whether some node can run the graph now: it runs a ready pool of every step's deployment. */
  public boolean ready(String name) {
    return nodes(name).stream().anyMatch(GraphNode::ready);
  }

  /** Why the graph cannot serve now, in a sentence; null if it can (or is unknown). */
  public String notReadyReason(String name) {
    GraphSpec g = mirror.get(name);
    if (g == null || ready(name)) {
      return null;
    }
    try {
      return "graph '" + name + "': " + nodes.missing(g, nodes.versions(g));
    } catch (InferenceException noVersion) {
      return noVersion.getMessage();
    }
  }

  /** Requests of the graph this node is running now. */
  public int inFlight(String name) {
    GraphMeters m = meters.get(name);
    return m == null ? 0 : m.inFlight();
  }

  /**
   * Runs a request through graph {@code name}, checking it against the graph's inputs first.
   *
   * @param preferredNode where its steps should run (see the class comment); another node when that one cannot
   * @return the graph's outputs (those the request names, else all), or a failure as the class comment says
   */
  public CompletableFuture<InferenceResponse> infer(RequestContext context, String name, String preferredNode,
                                                    InferenceRequest request) {
    GraphSpec g = mirror.get(name);
    if (g == null) {
      return CompletableFuture.failedFuture(InferenceException.notFound("no graph named '" + name + "'"));
    }
    try {
      plan(g).validator().validate(request);
    } catch (InferenceException e) {
      return CompletableFuture.failedFuture(e);
    }
    return run(g, context, preferredNode, request);
  }

  /** {@link #infer(RequestContext, String, String, InferenceRequest)} for a request checked already. */
  public CompletableFuture<InferenceResponse> infer(RequestContext context, String name, String preferredNode,
                                                    ValidatedRequest request) {
    GraphSpec g = mirror.get(name);
    if (g == null) {
      return CompletableFuture.failedFuture(InferenceException.notFound("no graph named '" + name + "'"));
    }
    return run(g, context, preferredNode, request.request());
  }

  private CompletableFuture<InferenceResponse> run(GraphSpec g, RequestContext context, String preferredNode,
                                                   InferenceRequest request) {
    String node;
    Map<String, String> versions;
    try {
      versions = nodes.versions(g);
      node = nodes.choose(g, versions, preferredNode);
    } catch (InferenceException e) {
      return CompletableFuture.failedFuture(e);
    }
    GraphMeters m = meters.computeIfAbsent(g.name(), n -> new GraphMeters(registry, n));
    return new GraphRun(plan(g), context, request, node, versions, pools, m).start();
  }

  private GraphRun.Plan plan(GraphSpec g) {
    GraphRun.Plan p = plans.get(g.name());
    if (p == null || p.spec() != g) {
      p = GraphRun.Plan.of(g);
      plans.put(g.name(), p);
    }
    return p;
  }

  /** Stops following the store; the service stays registered (requests it runs finish). */
  @Override
  public void close() {
    String id = listener;
    if (id != null) {
      store.removeListener(id);
    }
  }
}
