package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.control.ManagementApi;
import io.kiln.control.PipelineApi;
import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.ServeController;
import io.kiln.pipelines.Applications;
import io.kiln.pipelines.DeploymentResolver;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.PipelineOptions;
import io.kiln.pipelines.Pipelines;
import io.kiln.testkit.OipRequest;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pipelines API over real HTTP, on two in-process nodes with the real serve controller and gateway:
 * a deployment file with pipelines is validated and applied, a run is started, read and streamed, and a
 * {@code data_key} naming a cached input routes inference to the node holding it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class PipelineApiTest {

  static final String TOKEN = "s3cret";
  static final Duration WAIT = Duration.ofSeconds(90);

  @TempDir
  static Path tmp;

  LocalCluster cluster;
  final Map<String, KilnRuntime> nodes = new LinkedHashMap<>();
  final Map<String, Pipelines> pipelines = new LinkedHashMap<>();
  final List<AutoCloseable> closers = new ArrayList<>();
  KilnGateway gateway;
  WebClient http;

  static final String FILE = """
      deployments:
        - name: ident
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input,  datatype: FP32, shape: [-1, 4]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 1}}
      pipelines:
        - name: media
          steps:
            - name: fetch
              fetch: "${input.media_uri}"
              resources: {fetch_slot: 1}
              strategy: spread
            - name: analyse
              infer: {deployment: ident}
            - name: describe
              class: io.kiln.pipelines.examples.DescribeStep
      """;

  static <T> T join(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  @BeforeAll
  void start() throws Exception {
    cluster = LocalCluster.create();
    for (String id : List.of("a", "b")) {
      Resources r = Resources.cpu(4).with("fetch_slot", 2);
      KilnRuntime rt = join(cluster.startNode(new NodeOptions(id, "127.0.0.1",
          id.equals("a") ? r.with("callback_slot", 1) : r, Map.of())));
      nodes.put(id, rt);
      PoolLoadBoard board = new PoolLoadBoard(rt);
      PoolClient client = new PoolClient(rt);
      ServeController serve = new ServeController(rt, client, board);
      Pipelines p = new Pipelines(rt, PipelineOptions.defaults(tmp, id).withCacheDir(tmp.resolve("cache").resolve(id)),
          DeploymentResolver.of(serve), client);
      join(board.ready());
      join(serve.start());
      join(p.start());
      pipelines.put(id, p);
      closers.add(0, board::close);
      closers.add(0, serve::close);
      closers.add(0, p::close);
      if (id.equals("a")) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        gateway = new KilnGateway(GatewayOptions.builder().host("127.0.0.1").httpPort(0).grpcPort(0).registry(registry)
            .build(), new ServeModelDirectory(serve), new PoolsDirectory(id, board, client), p.cacheIndex()::nodeFor);
        gateway.addRoutes(new PipelineApi(rt, p, TOKEN)::mount);
        gateway.addRoutes(new ManagementApi(rt, serve, new Applications(rt, serve, p), TOKEN)::mount);
      }
    }
    join(gateway.start(nodes.get("a").vertx()));
    http = WebClient.create(cluster.vertx());
  }

  @AfterAll
  void stop() throws Exception {
    if (http != null) {
      http.close();
    }
    if (gateway != null) {
      join(gateway.close());
    }
    for (AutoCloseable c : closers) {
      c.close();
    }
    cluster.close();
  }

  HttpResponse<Buffer> send(HttpMethod method, String path, Buffer body) throws Exception {
    var req = http.request(method, gateway.httpPort(), "127.0.0.1", path).bearerTokenAuthentication(TOKEN);
    return join((body == null ? req.send() : req.sendBuffer(body)).toCompletionStage());
  }

  HttpResponse<Buffer> get(String path) throws Exception {
    return send(HttpMethod.GET, path, null);
  }

  HttpResponse<Buffer> post(String path, String body) throws Exception {
    return send(HttpMethod.POST, path, Buffer.buffer(body));
  }

  void deployed() throws Exception {
    HttpResponse<Buffer> r = post("/api/v1/deployments?source=" + tmp.resolve("app.yaml"), FILE);
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(r.getHeader(PipelineApi.PIPELINES_HEADER)).isEqualTo("media");
    await().atMost(WAIT).until(() -> get("/v2/models/ident/ready").statusCode() == 200);
    await().atMost(WAIT).until(() -> nodes.keySet().stream().allMatch(n -> {
      try {
        return join(new PoolClient(nodes.get("a")).status("ident", "1", n)).ready();
      } catch (Exception e) {
        return false;
      }
    }));
  }

  @Test
  void everyCallNeedsTheToken() throws Exception {
    var r = join(http.get(gateway.httpPort(), "127.0.0.1", "/api/v1/pipelines").send().toCompletionStage());
    assertThat(r.statusCode()).isEqualTo(401);
    var d = join(http.post(gateway.httpPort(), "127.0.0.1", "/api/v1/deployments").sendBuffer(Buffer.buffer(FILE))
        .toCompletionStage());
    assertThat(d.statusCode()).isEqualTo(401);
  }

  @Test
  void aFileWithBrokenPipelinesIsRefusedWholeWithPositions() throws Exception {
    String broken = FILE.replace("strategy: spread", "strategy: {same_node_as: analyse}").replace("name: ident",
        "name: ident2");
    HttpResponse<Buffer> r = post("/api/v1/deployments", broken);
    assertThat(r.statusCode()).isEqualTo(400);
    JsonArray problems = r.bodyAsJsonObject().getJsonArray("problems");
    assertThat(problems.stream().map(o -> ((JsonObject) o).getString("message")).toList()).containsExactly(
        "'analyse' is a later step (steps[1]); same_node_as names a step that ran before this one",
        "unknown deployment 'ident'; did you mean 'ident2'?; known deployments: ident2");
    JsonObject first = problems.getJsonObject(0);
    assertThat(List.of(first.getInteger("line"), first.getInteger("column"))).containsExactly(16, 34);
    assertThat(first.getString("path")).isEqualTo("pipelines[0].steps[0].strategy.same_node_as");
    assertThat(get("/api/v1/pipelines/media").statusCode()).isIn(200, 404); // another test may have deployed it
    assertThat(join(pipelines.get("a").pipelines()).stream().map(p -> p.name())).doesNotContain("ident2");
    assertThat(get("/v2/models/ident2").statusCode()).isEqualTo(404);
  }

  /** {@link #FILE} with deployment {@code deployment} (which its infer step uses) and pipeline {@code pipeline}. */
  static String file(String deployment, String pipeline) {
    return FILE.replace("name: ident", "name: " + deployment).replace("deployment: ident}", "deployment: " + deployment + "}")
        .replace("name: media", "name: " + pipeline);
  }

  @Test
  void aDryRunOfDeploymentsAndPipelinesStoresNeitherWhicheverWayItIsSpelt() throws Exception {
    for (String dry : List.of("1", "true")) {
      String name = "dry" + dry;
      HttpResponse<Buffer> r = post("/api/v1/deployments?dry_run=" + dry, file(name, name + "-p"));
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
      assertThat(r.bodyAsJsonObject().getBoolean("applied")).isFalse();
      assertThat(r.bodyAsJsonObject().getJsonArray("deployments")).containsExactly(name + "@1");
      assertThat(r.bodyAsJsonObject().getString("planText")).contains(name);
      assertThat(r.getHeader(PipelineApi.PIPELINES_HEADER)).isEqualTo(name + "-p");
      assertThat(get("/api/v1/deployments/" + name).statusCode()).as("dry_run=" + dry).isEqualTo(404);
      assertThat(get("/api/v1/pipelines/" + name + "-p").statusCode()).as("dry_run=" + dry).isEqualTo(404);
    }
  }

  @Test
  void aValidFileAppliesItsDeploymentsAndItsPipelines() throws Exception {
    // It selects no node: the test is about what is stored, and no pool is then being created at shutdown.
    HttpResponse<Buffer> r = post("/api/v1/deployments", file("both", "both-p")
        .replace("worker_resources: {CPU: 1}}", "worker_resources: {CPU: 1}, node_selector: {zone: nowhere}}"));
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(r.bodyAsJsonObject().getBoolean("applied")).isTrue();
    assertThat(r.getHeader(PipelineApi.PIPELINES_HEADER)).isEqualTo("both-p");
    assertThat(get("/api/v1/deployments/both").statusCode()).isEqualTo(200);
    assertThat(get("/api/v1/pipelines/both-p").statusCode()).isEqualTo(200);
  }

  @Test
  void aValidDeploymentBesideAnInvalidPipelineIsNotStored() throws Exception {
    String yaml = file("lonely", "lonely-p").replace("deployment: lonely}", "deployment: elsewhere}");
    HttpResponse<Buffer> r = post("/api/v1/deployments", yaml);
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(400);
    JsonArray problems = r.bodyAsJsonObject().getJsonArray("problems");
    assertThat(problems.stream().map(o -> ((JsonObject) o).getString("path")).toList())
        .containsExactly("pipelines[0].steps[1].infer.deployment");
    assertThat(problems.getJsonObject(0).getInteger("line")).isEqualTo(18);
    assertThat(r.getHeader(PipelineApi.PIPELINES_HEADER)).isNull();
    assertThat(get("/api/v1/deployments/lonely").statusCode()).isEqualTo(404);
    assertThat(get("/api/v1/pipelines/lonely-p").statusCode()).isEqualTo(404);
  }

  @Test
  void anInvalidDeploymentBesideAValidPipelineIsNotStored() throws Exception {
    String yaml = file("wrong", "wrong-p").replace("workers_per_node: 1", "workers_per_node: 0");
    HttpResponse<Buffer> r = post("/api/v1/deployments", yaml);
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(400);
    JsonArray problems = r.bodyAsJsonObject().getJsonArray("problems");
    assertThat(problems.stream().map(o -> ((JsonObject) o).getString("path")).toList())
        .containsExactly("deployments[0].pool.workers_per_node");
    assertThat(get("/api/v1/deployments/wrong").statusCode()).isEqualTo(404);
    assertThat(get("/api/v1/pipelines/wrong-p").statusCode()).isEqualTo(404);
  }

  @Test
  void aRunStartedOverHttpCanBeReadAndStreamed() throws Exception {
    deployed();
    Path media = Files.write(Files.createDirectories(tmp.resolve("media")).resolve("clip.f32"), floats(1, 2, 3, 4));
    HttpResponse<Buffer> started = post("/api/v1/pipelines/media/runs",
        new JsonObject().put("input", new JsonObject().put("media_uri", media.toUri().toString())).encode());
    assertThat(started.statusCode()).as(started.bodyAsString()).isEqualTo(202);
    String id = started.bodyAsJsonObject().getString("run_id");
    assertThat(started.getHeader("Location")).isEqualTo("/api/v1/pipelines/media/runs/" + id);

    List<String> sse = new ArrayList<>();
    HttpClient client = cluster.vertx().createHttpClient();
    var done = client.request(new RequestOptions().setMethod(HttpMethod.GET).setHost("127.0.0.1")
            .setPort(gateway.httpPort()).setURI("/api/v1/pipelines/media/runs/" + id + "/events")
            .putHeader("Authorization", "Bearer " + TOKEN))
        .compose(req -> req.send()).compose(resp -> {
          assertThat(resp.getHeader("Content-Type")).isEqualTo("text/event-stream");
          resp.handler(b -> sse.add(b.toString()));
          return resp.end();
        });
    join(done.toCompletionStage()); // the stream ends with the run
    String stream = String.join("", sse);
    assertThat(stream).contains("event: run_started").contains("event: step_succeeded").endsWith("\n\n");
    assertThat(stream.indexOf("event: run_succeeded")).isGreaterThan(stream.indexOf("event: run_started"));

    JsonObject run = get("/api/v1/pipelines/media/runs/" + id).bodyAsJsonObject();
    assertThat(run.getString("state")).as(run.encodePrettily()).isEqualTo("SUCCEEDED");
    JsonObject fetch = run.getJsonArray("steps").getJsonObject(0);
    JsonObject analyse = run.getJsonArray("steps").getJsonObject(1);
    assertThat(analyse.getString("nodeId")).isEqualTo(fetch.getString("nodeId"));
    assertThat(analyse.getJsonObject("output").getJsonArray("outputs").getJsonObject(0).getJsonArray("data"))
        .containsExactly(1.0, 2.0, 3.0, 4.0);
    assertThat(get("/api/v1/pipelines/media/runs").bodyAsJsonObject().getJsonArray("runs").stream()
        .map(o -> ((JsonObject) o).getString("runId"))).contains(id);
    // A resumed stream of a finished run replays only what came after the client's last event.
    long lastSeq = run.getJsonArray("events").getJsonObject(run.getJsonArray("events").size() - 2).getLong("seq");
    var resumed = join(http.get(gateway.httpPort(), "127.0.0.1", "/api/v1/pipelines/media/runs/" + id + "/events")
        .bearerTokenAuthentication(TOKEN).putHeader("Last-Event-ID", Long.toString(lastSeq)).send().toCompletionStage());
    assertThat(resumed.bodyAsString()).contains("event: run_succeeded").doesNotContain("event: run_started");
    client.close();
  }

  @Test
  void refusedRuns() throws Exception {
    deployed();
    assertThat(post("/api/v1/pipelines/nope/runs", "{}").statusCode()).isEqualTo(404);
    HttpResponse<Buffer> missing = post("/api/v1/pipelines/media/runs", "{\"input\": {}}");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.bodyAsJsonObject().getString("error")).contains("the run's input has no field 'media_uri'");
    assertThat(post("/api/v1/pipelines/media/runs", "[1]").statusCode()).isEqualTo(400);
    assertThat(post("/api/v1/pipelines/media/runs", "{\"input\": {\"a\": {}}}").bodyAsJsonObject().getString("error"))
        .isEqualTo("input.a must be a string, number or boolean");
    assertThat(get("/api/v1/pipelines/media/runs/media-000000000000").statusCode()).isEqualTo(404);
    assertThat(get("/api/v1/pipelines/media/runs/media-000000000000/events").statusCode()).isEqualTo(404);
  }

  @Test
  void aDataKeyRoutesInferenceToTheNodeHoldingTheInput() throws Exception {
    deployed();
    Path media = Files.write(Files.createDirectories(tmp.resolve("media")).resolve("routed.f32"), floats(5, 6, 7, 8));
    String uri = media.toUri().toString();
    // Cached on b only; the gateway runs on a.
    nodes.get("b").vertx().executeBlocking(() -> pipelines.get("b").cache().fetch(uri, 1000)).toCompletionStage()
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    await().atMost(WAIT).until(() -> pipelines.get("a").cacheIndex().nodeFor(uri).isPresent());
    for (String dataKey : List.of(uri, NodeCache.keyOf(uri))) {
      String request = OipRequest.fp32("input", new long[] {1, 4}, 1, 2, 3, 4).parameter("data_key", dataKey).json();
      HttpResponse<Buffer> r = post("/v2/models/ident/infer", request);
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
      assertThat(r.bodyAsJsonObject().getJsonObject("parameters").getString("kiln_node")).isEqualTo("b");
    }
    JsonObject cache = get("/api/v1/cache").bodyAsJsonObject();
    assertThat(cache.getString("node")).isEqualTo("a");
    assertThat(cache.getJsonObject("index").getJsonArray(NodeCache.keyOf(uri))).containsExactly("b");
  }

  static byte[] floats(float... v) {
    ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(v);
    return b.array();
  }
}
