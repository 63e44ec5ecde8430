package io.kiln.pipelines;

import static io.kiln.runtime.testing.Await.result;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.Resources;
import io.kiln.runtime.testing.TestNodes;
import io.kiln.serve.DeploymentLoader;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Kiln nodes in one JVM for pipeline tests: a {@link LocalCluster} whose head advertises
 * {@code callback_slot: 1} and every node {@code fetch_slot: 2}, a warm {@code builtin:identity} pool
 * ({@value #DEPLOYMENT}, input FP32 [-1, 4]), {@link Pipelines} and model graphs on every node, and an HTTP server on
 * loopback that serves media (slowly, so fetches overlap) and records webhook calls.
 */
final class PipelineCluster implements AutoCloseable {

  static final String DEPLOYMENT = "ident";
  static final String HEAD = "head";
  static final Duration WAIT = Duration.ofSeconds(90);
  static final TensorSpec INPUT = new TensorSpec("input", DataType.FP32, new long[] {-1, 4});

  final LocalCluster cluster = LocalCluster.create();
  final Map<String, KilnRuntime> nodes = new LinkedHashMap<>();
  final Map<String, Pipelines> pipelines = new LinkedHashMap<>();
  final Map<String, io.kiln.pipelines.graphs.Graphs> graphs = new LinkedHashMap<>();
  private final List<io.kiln.pools.PoolLoadBoard> boards = new ArrayList<>();
  final Path root;
  final HttpServer http;
  final List<JsonObject> callbacks = new CopyOnWriteArrayList<>();
  final List<JsonObject> completions = new CopyOnWriteArrayList<>();
  final AtomicInteger mediaRequests = new AtomicInteger();

  static final ModelSpec IDENTITY = ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
      .inputs(List.of(INPUT)).build();

  /** @param root folder for the nodes' caches; media files may be read from under it */
  PipelineCluster(Path root, String... nodeIds) throws Exception {
    this(root, List.of(root), Map.of(DEPLOYMENT, IDENTITY), nodeIds);
  }

  /**
   * @param fileRoots where {@code file://} inputs may be read from
   * @param models a pool of one worker per node, version "1", for each deployment name
   */
  PipelineCluster(Path root, List<Path> fileRoots, Map<String, ModelSpec> models, String... nodeIds) throws Exception {
    this(root, fileRoots, models, poolsOf(models), nodeIds);
  }

  /** Pools as the deployments declare them (batching, queue, restarts), one worker per node. */
  PipelineCluster(Path root, List<Path> fileRoots, List<io.kiln.serve.DeploymentSpec> deployments, String... nodeIds)
      throws Exception {
    this(root, fileRoots, modelsOf(deployments), poolsOf(deployments), nodeIds);
  }

  private static Map<String, ModelSpec> modelsOf(List<io.kiln.serve.DeploymentSpec> deployments) {
    Map<String, ModelSpec> out = new java.util.LinkedHashMap<>();
    deployments.forEach(d -> out.put(d.name(), d.model()));
    return out;
  }

  private static Map<String, java.util.function.Function<String, PoolSpec>> poolsOf(Map<String, ModelSpec> models) {
    Map<String, java.util.function.Function<String, PoolSpec>> out = new java.util.LinkedHashMap<>();
    models.forEach((name, m) -> out.put(name, id -> new PoolSpec(name, "1", id, m, PoolConfig.DEFAULTS, 1,
        Resources.cpu(1), 0)));
    return out;
  }

  private static Map<String, java.util.function.Function<String, PoolSpec>> poolsOf(
      List<io.kiln.serve.DeploymentSpec> deployments) {
    Map<String, java.util.function.Function<String, PoolSpec>> out = new java.util.LinkedHashMap<>();
    deployments.forEach(d -> out.put(d.name(), id -> d.poolOn(id, 1)));
    return out;
  }

  private PipelineCluster(Path root, List<Path> fileRoots, Map<String, ModelSpec> models,
                          Map<String, java.util.function.Function<String, PoolSpec>> pools, String... nodeIds)
      throws Exception {
    this.root = root;
    http = cluster.vertx().createHttpServer().requestHandler(req -> {
      String path = req.path();
      if (path.startsWith("/media/")) {
        mediaRequests.incrementAndGet();
        byte[] body = media(path.substring(7), 2);
        cluster.vertx().setTimer(200, id -> req.response().end(io.vertx.core.buffer.Buffer.buffer(body)));
      } else if (path.startsWith("/hook/")) {
        req.body().onSuccess(b -> {
          (path.equals("/hook/callback") ? callbacks : completions).add(b.toJsonObject());
          req.response().setStatusCode(204).end();
        });
      } else {
        req.response().setStatusCode(404).end();
      }
    }).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    for (String id : nodeIds) {
      Resources r = Resources.cpu(8).with("fetch_slot", 2);
      nodes.put(id, TestNodes.start(cluster, id, id.equals(HEAD) ? r.with("callback_slot", 1) : r));
    }
    await().atMost(WAIT).until(() -> node(nodeIds[0]).clusterView().aliveNodes().size() == nodeIds.length);
    PoolClient client = new PoolClient(node(nodeIds[0]));
    for (var m : models.entrySet()) {
      for (String id : nodeIds) {
        result(PoolManager.getOrCreate(node(id), pools.get(m.getKey()).apply(id)), WAIT);
      }
      for (String id : nodeIds) {
        await().atMost(WAIT).until(() -> result(client.status(m.getKey(), "1", id)).ready());
      }
    }
    DeploymentResolver resolver = name -> Optional.ofNullable(models.get(name))
        .map(m -> new InferTarget(name, "1", m.inputs()));
    for (String id : nodeIds) {
      io.kiln.pools.PoolLoadBoard board = new io.kiln.pools.PoolLoadBoard(node(id));
      boards.add(board);
      result(board.ready(), WAIT);
      io.kiln.pipelines.graphs.Graphs g = new io.kiln.pipelines.graphs.Graphs(node(id),
          name -> models.containsKey(name) ? Optional.of("1") : Optional.empty(), board,
          new PoolClient(node(id)));
      result(g.start(), WAIT);
      graphs.put(id, g);
    }
    for (String id : nodeIds) {
      PipelineOptions o = PipelineOptions.defaults(root, id).withCacheDir(cacheDir(id)).withFileRoots(fileRoots);
      Pipelines p = new Pipelines(node(id), o, resolver);
      result(p.start(), WAIT);
      pipelines.put(id, p);
    }
  }

  KilnRuntime node(String id) {
    return nodes.get(id);
  }

  Pipelines pipelines(String id) {
    return pipelines.get(id);
  }

  /** The model graphs of a node (every node runs one, with a load board of its own). */
  io.kiln.pipelines.graphs.Graphs graphs(String id) {
    return graphs.get(id);
  }

  Path cacheDir(String id) {
    return root.resolve("cache").resolve(id);
  }

  String url(String path) {
    return "http://127.0.0.1:" + http.actualPort() + path;
  }

  /** Loads pipelines from YAML (with the identity deployment declared) and applies them. */
  void apply(String pipelinesYaml) {
    String yaml = """
        deployments:
          - name: ident
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs: [{name: input, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1}
        """ + pipelinesYaml;
    PipelineLoader loader = new PipelineLoader(PipelineLoader.Options.DEFAULT
        .withDeployments(DeploymentLoader.Options.DEFAULT.withCheckModelPaths(false)));
    PipelineFile file = loader.load(yaml, Path.of("test.yaml"), Set.of());
    result(pipelines.values().iterator().next().apply(file.pipelines()));
  }

  /** Deterministic media for an id: {@code rows} rows of 4 floats. */
  static byte[] media(String id, int rows) {
    return floatsToBytes(expected(id, rows));
  }

  static float[] expected(String id, int rows) {
    float[] v = new float[rows * 4];
    for (int i = 0; i < v.length; i++) {
      v[i] = (id.hashCode() % 97) + i * 0.25f;
    }
    return v;
  }

  static byte[] floatsToBytes(float[] v) {
    ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(v);
    return b.array();
  }

  /** Writes a media file under the root (for file:// inputs). */
  Path mediaFile(String id, int rows) throws Exception {
    Path dir = Files.createDirectories(root.resolve("media"));
    return Files.write(dir.resolve(id + ".f32"), media(id, rows));
  }

  /** Keys of the files in a node's cache folder. */
  List<String> cachedKeys(String id) throws Exception {
    List<String> out = new ArrayList<>();
    try (var s = Files.list(cacheDir(id))) {
      s.map(p -> p.getFileName().toString()).filter(NodeCache::isKey).forEach(out::add);
    }
    return out;
  }

  RunStatus status(String runId) {
    return result(pipelines.get(HEAD) != null ? pipelines.get(HEAD).run(runId)
        : pipelines.values().iterator().next().run(runId)).orElseThrow();
  }

  RunStatus awaitEnd(String via, String runId) {
    await().atMost(WAIT).until(() -> result(pipelines(via).run(runId)).map(s -> s.state().terminal()).orElse(false));
    return result(pipelines(via).run(runId)).orElseThrow();
  }

  /** Crashes a node (as SIGKILL would); its {@link Pipelines} object stays, cut off from the cluster. */
  void crash(String id) {
    cluster.crash(id);
    nodes.remove(id);
    pipelines.remove(id);
    graphs.remove(id);
  }

  @Override
  public void close() {
    pipelines.values().forEach(Pipelines::close);
    graphs.values().forEach(io.kiln.pipelines.graphs.Graphs::close);
    boards.forEach(io.kiln.pools.PoolLoadBoard::close);
    cluster.close();
  }
}
