package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.RepositoryIndexRequest;
import io.kiln.protocol.grpc.RepositoryIndexResponse;
import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.grpc.client.GrpcClient;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The repository index over every model, {@code /v2/models/{m}/config}, {@code /v2/models/{m}/stats} and the
 * server's extensions, on a real node (serve controller, real pools of the built-in identity, gateway with the
 * repository routes mounted, one registry as a node shares it).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class ModelReportsTest {

  private static final String YAML = """
      deployments:
        - name: pair
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 3]}, {name: z, datatype: INT64, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 3]}, {name: w, datatype: INT64, shape: [-1, 2]}]
          pool: {workers_per_node: 1}
          batching: {max_batch_size: 4, max_batch_delay_ms: 2}
        - name: stranded
          version: "1"
          model: {uri: builtin:identity, engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 1]}],
                   outputs: [{name: y, datatype: FP32, shape: [-1, 1]}]}
          pool: {workers_per_node: 1, node_selector: {accelerator: tpu}}
        - name: zoo
          version: "1"
          repository:
            models:
              - {name: a, uri: "builtin:identity"}
              - {name: b, uri: "builtin:identity"}
            defaults: {engine: Builtin, inputs: [{name: x, datatype: FP32, shape: [-1, 4]}], outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]}
            max_models_per_worker: 1
          pool: {workers_per_node: 1}
      """;
  private static final String GOOD = OipRequest.fp32("x", new long[] {1, 3}, 1, 2, 3)
      .input(OipRequest.Input.int64("z", new long[] {1, 2}, 4, 5)).json();
  /** Well-formed, but x has 4 columns where the model's signature says 3. */
  private static final String BAD_SHAPE = OipRequest.fp32("x", new long[] {1, 4}, 1, 2, 3, 4)
      .input(OipRequest.Input.int64("z", new long[] {1, 2}, 4, 5)).json();

  private ManagedNode node;

  @BeforeAll
  void start() {
    node = new ManagedNode(null);
    HttpResponse<Buffer> applied = node.call(HttpMethod.POST, "/api/v1/deployments", YAML);
    assertThat(applied.statusCode()).as(applied.bodyAsString()).isEqualTo(200);
    for (String d : List.of("pair", "zoo")) {
      await().atMost(ManagedNode.WAIT).until(() -> node.serve.status(d)
          .filter(s -> s.phase() == DeploymentStatus.Phase.READY).isPresent());
      await().atMost(ManagedNode.WAIT).until(() -> node.board.pools(d, "1").stream().anyMatch(p -> p.ready()));
    }
    await().atMost(ManagedNode.WAIT).until(() -> node.serve.status("stranded")
        .filter(s -> s.phase() == DeploymentStatus.Phase.UNSCHEDULABLE).isPresent());
    HttpResponse<Buffer> loaded = node.call(HttpMethod.POST, "/v2/repository/models/a/load", "");
    assertThat(loaded.statusCode()).as(loaded.bodyAsString()).isEqualTo(200);
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
  }

  @Test
  void theIndexListsThePlainDeploymentAndTheRepositoryModelsWithTheirStates() {
    List<String> all = index("");
    assertThat(all).hasSize(4);
    assertThat(all.get(0)).isEqualTo("pair/1 READY ");
    // The controller's reason: no node has the label the deployment's node_selector wants.
    assertThat(all.get(1)).startsWith("stranded/1 UNAVAILABLE no node selected");
    assertThat(all.subList(2, 4)).containsExactly("a/1 READY ", "b/1 UNAVAILABLE not loaded");
    assertThat(index("{}")).isEqualTo(all);
    assertThat(index("{\"ready\": true}")).containsExactly("pair/1 READY ", "a/1 READY ");
    assertThat(index("{\"ready\": false}")).isEqualTo(all);
    HttpResponse<Buffer> bad = node.call(HttpMethod.POST, "/v2/repository/index", "[1]");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.bodyAsString()).contains("body");
  }

  @Test
  void overGrpcTheIndexIsTheSame() {
    Vertx vertx = Vertx.vertx();
    GrpcClient grpc = GrpcClient.client(vertx);
    try {
      RepositoryIndexResponse all = grpcIndex(grpc, RepositoryIndexRequest.getDefaultInstance());
      assertThat(all.getModelsList()).extracting(m -> m.getName() + "/" + m.getVersion() + " " + m.getState())
          .containsExactly("pair/1 READY", "stranded/1 UNAVAILABLE", "a/1 READY", "b/1 UNAVAILABLE");
      RepositoryIndexResponse ready = grpcIndex(grpc, RepositoryIndexRequest.newBuilder().setReady(true).build());
      assertThat(ready.getModelsList()).extracting(m -> m.getName()).containsExactly("pair", "a");
      RepositoryIndexResponse onlyPair = grpcIndex(grpc,
          RepositoryIndexRequest.newBuilder().setRepositoryName("pair").build());
      assertThat(onlyPair.getModelsList()).extracting(m -> m.getName()).containsExactly("pair");
    } finally {
      ManagedNode.join(grpc.close().toCompletionStage());
      ManagedNode.join(vertx.close().toCompletionStage());
    }
  }

  @Test
  void theConfigOfAModelWithTwoInputsCarriesItsTensorsBatchingAndWorkers() {
    for (String uri : List.of("/v2/models/pair/config", "/v2/models/pair/versions/1/config")) {
      HttpResponse<Buffer> r = node.call(HttpMethod.GET, uri, null);
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
      JsonObject c = r.bodyAsJsonObject();
      assertThat(c.getString("name")).isEqualTo("pair");
      assertThat(c.getString("platform")).isEqualTo("kiln_builtin");
      assertThat(c.getInteger("max_batch_size")).isEqualTo(4);
      assertThat(c.getJsonArray("input")).isEqualTo(new JsonArray()
          .add(new JsonObject().put("name", "x").put("data_type", "TYPE_FP32").put("dims", new JsonArray().add(-1).add(3)))
          .add(new JsonObject().put("name", "z").put("data_type", "TYPE_INT64").put("dims", new JsonArray().add(-1).add(2))));
      assertThat(c.getJsonArray("output").getJsonObject(1).getString("name")).isEqualTo("w");
      assertThat(c.getJsonObject("dynamic_batching").getLong("max_queue_delay_microseconds")).isEqualTo(2000);
      assertThat(c.getJsonArray("instance_group").getJsonObject(0))
          .isEqualTo(new JsonObject().put("count", 1).put("kind", "KIND_CPU"));
    }
    JsonObject repositoryModel = node.call(HttpMethod.GET, "/v2/models/b/config", null).bodyAsJsonObject();
    assertThat(repositoryModel.getJsonArray("input").getJsonObject(0).getJsonArray("dims"))
        .isEqualTo(new JsonArray().add(-1).add(4));
    assertThat(repositoryModel.getString("kiln_deployment")).isEqualTo("zoo");
    assertThat(repositoryModel.containsKey("dynamic_batching")).as("max_batch_size 1 does not batch").isFalse();
  }

  @Test
  void unknownModelsAndVersionsAre404NamingThem() {
    for (String what : List.of("config", "stats")) {
      HttpResponse<Buffer> r = node.call(HttpMethod.GET, "/v2/models/nope/" + what, null);
      assertThat(r.statusCode()).isEqualTo(404);
      assertThat(r.bodyAsJsonObject().getString("error")).contains("'nope'");
      HttpResponse<Buffer> v = node.call(HttpMethod.GET, "/v2/models/pair/versions/9/" + what, null);
      assertThat(v.statusCode()).isEqualTo(404);
      assertThat(v.bodyAsJsonObject().getString("error")).contains("'pair'").contains("'9'");
    }
  }

  @Test
  void statsCountTheSuccessfulAndFailedInferencesExactly() {
    long before = System.currentTimeMillis();
    int ok = 5;
    int failed = 3;
    for (int i = 0; i < ok; i++) {
      HttpResponse<Buffer> r = node.call(HttpMethod.POST, "/v2/models/pair/infer", GOOD);
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    }
    for (int i = 0; i < failed; i++) {
      HttpResponse<Buffer> r = node.call(HttpMethod.POST, "/v2/models/pair/infer", BAD_SHAPE);
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(400);
    }
    await().atMost(ManagedNode.WAIT).untilAsserted(() -> {
      JsonObject body = node.call(HttpMethod.GET, "/v2/models/pair/stats", null).bodyAsJsonObject();
      assertThat(body.getString("kiln_scope")).isEqualTo("node");
      JsonObject s = body.getJsonArray("model_stats").getJsonObject(0);
      assertThat(s.getString("name")).isEqualTo("pair");
      assertThat(s.getLong("inference_count")).isEqualTo(ok);
      JsonObject st = s.getJsonObject("inference_stats");
      assertThat(st.getJsonObject("success").getLong("count")).isEqualTo(ok);
      assertThat(st.getJsonObject("success").getLong("ns")).isPositive();
      assertThat(st.getJsonObject("fail").getLong("count")).isEqualTo(failed);
      // The failed ones never reached the pool; the good ones each waited in its queue once, in 1 to 5 batches.
      assertThat(st.getJsonObject("queue").getLong("count")).isEqualTo(ok);
      assertThat(st.getJsonObject("compute_infer").getLong("count")).isBetween(1L, (long) ok)
          .isEqualTo(s.getLong("execution_count"));
      assertThat(s.getLong("last_inference")).isBetween(before, System.currentTimeMillis());
      assertThat(s.getJsonArray("batch_stats")).isEmpty();
    });
    JsonObject v1 = node.call(HttpMethod.GET, "/v2/models/pair/versions/1/stats", null).bodyAsJsonObject()
        .getJsonArray("model_stats").getJsonObject(0);
    assertThat(v1.getString("version")).isEqualTo("1");
    assertThat(v1.getLong("inference_count")).isEqualTo(ok);
    JsonObject untouched = node.call(HttpMethod.GET, "/v2/models/b/stats", null).bodyAsJsonObject()
        .getJsonArray("model_stats").getJsonObject(0);
    assertThat(untouched.getLong("inference_count")).isZero();
    assertThat(untouched.getLong("last_inference")).isZero();
  }

  @Test
  void serverMetadataAdvertisesTheExtensionsServed() {
    JsonObject meta = node.call(HttpMethod.GET, "/v2", null).bodyAsJsonObject();
    assertThat(meta.getJsonArray("extensions").getList()).containsExactlyInAnyOrder("binary_tensor_data",
        "model_repository", "model_configuration", "statistics", "generate", "system_shared_memory");
  }

  private List<String> index(String body) {
    HttpResponse<Buffer> r = node.call(HttpMethod.POST, "/v2/repository/index", body);
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    return new JsonArray(r.bodyAsString()).stream().map(o -> (JsonObject) o)
        .map(j -> j.getString("name") + "/" + j.getString("version") + " " + j.getString("state") + " "
            + j.getString("reason")).toList();
  }

  private RepositoryIndexResponse grpcIndex(GrpcClient grpc, RepositoryIndexRequest request) {
    return ManagedNode.join(grpc.request(SocketAddress.inetSocketAddress(node.gateway.grpcPort(), "127.0.0.1"),
        GRPCInferenceServiceGrpcClient.RepositoryIndex).compose(req -> {
          req.end(request);
          return req.response().compose(resp -> resp.last());
        }).toCompletionStage());
  }
}
