package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kiln.deploy.node.ServingNode;
import io.kiln.pipelines.Applications;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelMetadataRequest;
import io.kiln.protocol.grpc.ModelMetadataResponse;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import io.micrometer.core.instrument.DistributionSummary;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.grpc.common.GrpcStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Model graphs served as models on two in-process nodes (real gateways, pools and builtin models): a graph of two
 * deployments, the second taking two inputs (one from the first step, one from the request), over HTTP and gRPC with
 * its declared inputs and outputs as metadata, all steps on the node that received the request; concurrent requests
 * batched by each step's pool; a failing step named in the error; a deadline carried into a step's pool; per-graph
 * meters; a file with a broken graph refused whole.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class GraphEndToEndTest {

  static final String YAML = """
      deployments:
        - name: scale
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, -1]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, -1]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 16, max_batch_delay_ms: 30}
        - name: pair
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: a, datatype: FP32, shape: [-1, 4]}, {name: b, datatype: INT64, shape: [-1, 2]}]
            outputs: [{name: a_out, datatype: FP32, shape: [-1, 4]}, {name: b_out, datatype: INT64, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 16, max_batch_delay_ms: 30}
        - name: nap
          version: "1"
          model:
            uri: builtin:sleep
            engine: Builtin
            inputs:  [{name: ms, datatype: FP32, shape: [-1, 1]}]
            outputs: [{name: out, datatype: FP32, shape: [-1, 1]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
      graphs:
        - name: chain
          inputs:
            - {name: v, datatype: FP32, shape: [-1, 4]}
            - {name: n, datatype: INT64, shape: [-1, 2]}
          steps:
            - {name: first, model: scale, input_map: {x: input.v}}
            - name: both
              model: pair
              input_map: {a: first.y, b: input.n}
          outputs:
            - {name: values, datatype: FP32, shape: [-1, 4], from: both.a_out}
            - {name: counts, datatype: INT64, shape: [-1, 2], from: both.b_out}
        - name: strict
          inputs:
            - {name: v, datatype: FP32, shape: [-1, -1]}
            - {name: n, datatype: INT64, shape: [-1, 2]}
          steps:
            - {name: head, model: scale, input_map: {x: input.v}}
            - {name: narrow, model: pair, input_map: {a: head.y, b: input.n}}
          outputs: [{name: out, datatype: FP32, shape: [-1, 4], from: narrow.a_out}]
        - name: sleepy
          inputs: [{name: ms, datatype: FP32, shape: [-1, 1]}]
          steps:
            - {name: rest, model: nap, input_map: {ms: input.ms}}
          outputs: [{name: out, datatype: FP32, shape: [-1, 1], from: rest.out}]
      """;

  private final Http http = new Http();
  private ServingCluster cluster;
  private OipGrpc grpc;

  @BeforeAll
  void deploy() {
    cluster = ServingCluster.start("a", "b");
    ServingNode a = cluster.node("a");
    Applications.Result r = ServingCluster.join(new Applications(a.runtime(), a.serve(), a.pipelines())
        .apply(YAML, ServingCluster.repositoryRoot().resolve("graphs.yaml"), false));
    assertThat(r.graphs()).extracting(g -> g.name()).containsExactly("chain", "strict", "sleepy");
    for (String d : List.of("scale", "pair", "nap")) {
      cluster.awaitReady(d, 2);
    }
    await().atMost(ServingCluster.WAIT).until(() -> cluster.nodeIds().stream().allMatch(id ->
        List.of("chain", "strict", "sleepy").stream().allMatch(g -> cluster.node(id).graphs().ready(g))));
    grpc = new OipGrpc();
  }

  @AfterAll
  void stop() {
    if (grpc != null) {
      grpc.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  static String chainRequest(String id, float base, long count) {
    return OipRequest.create().id(id)
        .input(OipRequest.Input.fp32("v", new long[] {2, 4}, base, base + 1, base + 2, base + 3, -base, 0, 1, 2))
        .input(OipRequest.Input.int64("n", new long[] {2, 2}, count, count + 1, count + 2, count + 3)).json();
  }

  static JsonObject output(JsonObject response, String name) {
    for (Object o : response.getJsonArray("outputs")) {
      if (((JsonObject) o).getString("name").equals(name)) {
        return (JsonObject) o;
      }
    }
    throw new AssertionError("no output " + name + " in " + response);
  }

  static List<Number> numbers(JsonObject tensor) {
    return tensor.getJsonArray("data").stream().map(Number.class::cast).toList();
  }

  @Test
  void aGraphIsOneModelOverHttpWithItsDeclaredSignatureAndRunsOnTheNodeThatReceivedIt() {
    for (String node : List.of("a", "b")) {
      int port = cluster.node(node).httpPort();
      Http.Response meta = http.get(port, "/v2/models/chain");
      assertThat(meta.status()).as(meta.text()).isEqualTo(200);
      assertThat(meta.json().getString("platform")).isEqualTo("ensemble");
      assertThat(meta.json().getJsonArray("versions")).isEqualTo(new JsonArray().add("1"));
      assertThat(meta.json().getJsonArray("inputs")).isEqualTo(new JsonArray()
          .add(new JsonObject().put("name", "v").put("datatype", "FP32").put("shape", new JsonArray().add(-1).add(4)))
          .add(new JsonObject().put("name", "n").put("datatype", "INT64").put("shape", new JsonArray().add(-1).add(2))));
      assertThat(meta.json().getJsonArray("outputs").stream().map(o -> ((JsonObject) o).getString("name")).toList())
          .containsExactly("values", "counts");
      assertThat(http.get(port, "/v2/models/chain/ready").status()).isEqualTo(200);

      Http.Response r = http.postJson(port, "/v2/models/chain/infer", chainRequest("http-" + node, 10, 7));
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      JsonObject body = r.json();
      assertThat(body.getString("model_name")).isEqualTo("chain");
      assertThat(body.getString("id")).isEqualTo("http-" + node);
      assertThat(body.getJsonObject("parameters").getString("kiln_node")).as("local first").isEqualTo(node);
      assertThat(numbers(output(body, "values")).stream().map(Number::doubleValue).toList())
          .containsExactly(10.0, 11.0, 12.0, 13.0, -10.0, 0.0, 1.0, 2.0);
      assertThat(numbers(output(body, "counts")).stream().map(Number::longValue).toList())
          .containsExactly(7L, 8L, 9L, 10L);
      assertThat(output(body, "counts").getJsonArray("shape")).isEqualTo(new JsonArray().add(2).add(2));
    }
    Http.Response one = http.postJson(cluster.node("a").httpPort(), "/v2/models/chain/infer",
        OipRequest.create().input(OipRequest.Input.fp32("v", new long[] {1, 4}, 1, 2, 3, 4))
            .input(OipRequest.Input.int64("n", new long[] {1, 2}, 5, 6)).outputs("counts").json());
    assertThat(one.json().getJsonArray("outputs")).as("only the output asked for").hasSize(1);
  }

  @Test
  void aGraphIsOneModelOverGrpc() {
    int port = cluster.node("b").grpcPort();
    ModelMetadataResponse meta = ServingCluster.join(grpc.at(port)
        .modelMetadata(ModelMetadataRequest.newBuilder().setName("chain").build()).toCompletionStage());
    assertThat(meta.getPlatform()).isEqualTo("ensemble");
    assertThat(meta.getInputsList()).extracting(t -> t.getName()).containsExactly("v", "n");
    assertThat(meta.getOutputsList()).extracting(t -> t.getName()).containsExactly("values", "counts");

    ModelInferRequest req = OipRequest.create().id("grpc-1")
        .input(OipRequest.Input.fp32("v", new long[] {1, 4}, 1, 2, 3, 4))
        .input(OipRequest.Input.int64("n", new long[] {1, 2}, 40, 41)).grpc("chain");
    ModelInferResponse r = ServingCluster.join(grpc.at(port).modelInfer(req).toCompletionStage());
    assertThat(r.getModelName()).isEqualTo("chain");
    assertThat(r.getId()).isEqualTo("grpc-1");
    assertThat(r.getParametersMap().get("kiln_node").getStringParam()).isEqualTo("b");
    Map<String, Integer> index = new java.util.HashMap<>();
    for (int i = 0; i < r.getOutputsCount(); i++) {
      index.put(r.getOutputs(i).getName(), i);
    }
    assertThat(index.keySet()).containsExactlyInAnyOrder("values", "counts");
    byte[] values = r.getRawOutputContentsCount() > 0 ? r.getRawOutputContents(index.get("values")).toByteArray()
        : null;
    if (values != null) {
      assertThat(Http.floats(values, 0, values.length)).containsExactly(1, 2, 3, 4);
    } else {
      assertThat(r.getOutputs(index.get("values")).getContents().getFp32ContentsList()).containsExactly(1f, 2f, 3f, 4f);
    }

    OipGrpc.Result<ModelInferResponse> failed = grpc.call(port, GRPCInferenceServiceGrpcClient.ModelInfer,
        OipRequest.create().input(OipRequest.Input.fp32("v", new long[] {1, 3}, 1, 2, 3))
            .input(OipRequest.Input.int64("n", new long[] {1, 2}, 1, 2)).grpc("strict"), Map.of());
    assertThat(failed.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(failed.message()).contains("graph 'strict' step 'narrow' (pair@1 on node b)");
  }

  @Test
  void aFailingStepFailsTheRequestNamingTheStep() {
    Http.Response r = http.postJson(cluster.node("a").httpPort(), "/v2/models/strict/infer",
        OipRequest.create().input(OipRequest.Input.fp32("v", new long[] {1, 3}, 1, 2, 3))
            .input(OipRequest.Input.int64("n", new long[] {1, 2}, 1, 2)).json());
    assertThat(r.status()).as(r.text()).isEqualTo(400);
    assertThat(r.json().getString("error")).startsWith("graph 'strict' step 'narrow' (pair@1 on node a): ")
        .contains("'a'");
    // The graph's own inputs are checked before any step runs, as a model's are.
    Http.Response bad = http.postJson(cluster.node("a").httpPort(), "/v2/models/chain/infer",
        OipRequest.create().input(OipRequest.Input.fp32("v", new long[] {1, 4}, 1, 2, 3, 4)).json());
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.json().getString("error")).contains("'n'");
  }

  @Test
  void aDeadlineIsCarriedIntoTheStepsPool() {
    long before = cluster.stats("nap", "1", "a").cancelled() + cluster.stats("nap", "1", "a").expired();
    long t0 = System.nanoTime();
    Http.Response r = http.postJson(cluster.node("a").httpPort(), "/v2/models/sleepy/infer",
        OipRequest.create().input(OipRequest.Input.fp32("ms", new long[] {1, 1}, 3000)).json(),
        "kiln-timeout-ms", "300");
    assertThat(r.status()).as(r.text()).isEqualTo(504);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(2500));
    // The step's pool request was withdrawn (its answer dropped) or expired there: the context went with it.
    await().atMost(Duration.ofSeconds(10)).until(() ->
        cluster.stats("nap", "1", "a").cancelled() + cluster.stats("nap", "1", "a").expired() > before);
  }

  @Test
  void concurrentGraphRequestsAreBatchedByEachStepsPool() throws Exception {
    ServingNode a = cluster.node("a");
    int n = 64;
    ExecutorService clients = Executors.newFixedThreadPool(n);
    try {
      List<CompletableFuture<Http.Response>> calls = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int k = i;
        calls.add(CompletableFuture.supplyAsync(() -> http.postJson(a.httpPort(), "/v2/models/chain/infer",
            chainRequest("c" + k, k, k)), clients));
      }
      for (int i = 0; i < n; i++) {
        Http.Response r = calls.get(i).get();
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        assertThat(numbers(output(r.json(), "values")).get(0).doubleValue()).as("its own answer").isEqualTo(i);
        assertThat(numbers(output(r.json(), "counts")).get(0).longValue()).isEqualTo(i);
      }
    } finally {
      clients.shutdownNow();
    }
    for (String deployment : List.of("scale", "pair")) {
      DistributionSummary rows = a.registry().find("kiln.pool.batch.size").tag("deployment", deployment)
          .summary();
      assertThat(rows).as(deployment).isNotNull();
      assertThat(rows.max()).as(deployment + ": a batch of several graph requests' rows").isGreaterThan(2);
    }
    PromText metrics = PromText.scrape(a.httpPort());
    assertThat(metrics.sum("kiln_graph_requests_total", Map.of("graph", "chain", "outcome", "ok")))
        .isGreaterThanOrEqualTo(n);
    assertThat(metrics.sum("kiln_graph_step_duration_seconds_count", Map.of("graph", "chain", "step", "both",
        "deployment", "pair"))).isGreaterThanOrEqualTo(n);
    assertThat(metrics.sum("kiln_gateway_requests_total", Map.of("model", "chain"))).isGreaterThanOrEqualTo(n);
  }

  @Test
  void aFileWithABrokenGraphIsRefusedWholeNamingLineAndColumn() {
    ServingNode a = cluster.node("a");
    String broken = YAML.replace("- name: sleepy", "- name: sleepy2").replace("model: nap", "model: nop")
        .replace("{name: first, model: scale", "{name: first, model: scale2");
    List<String> lines = List.of(broken.split("\n"));
    int line = lines.indexOf(lines.stream().filter(l -> l.contains("model: scale2")).findFirst().orElseThrow()) + 1;
    int column = lines.get(line - 1).indexOf("scale2") + 1;
    assertThatThrownBy(() -> ServingCluster.join(new Applications(a.runtime(), a.serve(), a.pipelines())
        .apply(broken, ServingCluster.repositoryRoot().resolve("graphs.yaml"), false)))
        .hasRootCauseInstanceOf(DeploymentValidationException.class)
        .rootCause().satisfies(e -> assertThat(((DeploymentValidationException) e).problems())
            .extracting(p -> p.line() + ":" + p.column() + " " + p.message())
            .anySatisfy(m -> assertThat(m).startsWith(line + ":" + column + " unknown deployment 'scale2'"))
            .anySatisfy(m -> assertThat(m).contains("unknown deployment 'nop'")));
    assertThat(a.graphs().names()).containsExactly("chain", "sleepy", "strict");
  }
}
