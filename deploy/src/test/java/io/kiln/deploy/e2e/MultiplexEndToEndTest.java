package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.ModelReadyRequest;
import io.kiln.protocol.grpc.ModelRepositoryParameter;
import io.kiln.protocol.grpc.RepositoryIndexRequest;
import io.kiln.protocol.grpc.RepositoryIndexResponse;
import io.kiln.protocol.grpc.RepositoryModelLoadRequest;
import io.kiln.protocol.grpc.RepositoryModelLoadResponse;
import io.kiln.protocol.grpc.RepositoryModelUnloadRequest;
import io.kiln.protocol.grpc.RepositoryModelUnloadResponse;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.grpc.common.GrpcStatus;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A multiplexed deployment on two assembled nodes: a repository of six built-in identity models, one worker per node
 * keeping at most two. Requests name their model by path ({@code /v2/models/m3/infer}) or by the {@code model_id}
 * parameter; routers prefer the node whose pool holds the model; the OIP repository endpoints list, load and unload, over HTTP and gRPC.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Tag("slow")
class MultiplexEndToEndTest {

  private static final String YAML = """
      deployments:
        - name: zoo
          version: "1"
          repository:
            models:
              - {name: m0, uri: "builtin:identity"}
              - {name: m1, uri: "builtin:identity"}
              - {name: m2, uri: "builtin:identity"}
              - {name: m3, uri: "builtin:identity"}
              - {name: m4, uri: "builtin:identity"}
              - {name: m5, uri: "builtin:identity"}
            defaults:
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
            max_models_per_worker: 2
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 0}
      """;

  private final Http http = new Http();
  private ServingCluster cluster;

  @BeforeAll
  void deploy() {
    cluster = ServingCluster.start("node-1", "node-2");
    cluster.deploy(YAML);
    cluster.awaitReady("zoo", 2);
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private int port(String node) {
    return cluster.node(node).httpPort();
  }

  private static String request(float v, String modelId) {
    OipRequest r = OipRequest.fp32("x", new long[] {1, 4}, v, v, v, v);
    return (modelId == null ? r : r.parameter("model_id", modelId)).json();
  }

  private Http.Response index(String node) {
    return http.postJson(port(node), "/v2/repository/index", "{}");
  }

  private String state(String node, String model) {
    JsonArray all = new JsonArray(index(node).text());
    for (Object o : all) {
      JsonObject m = (JsonObject) o;
      if (m.getString("name").equals(model)) {
        return m.getString("state");
      }
    }
    return null;
  }

  @Test
  @Order(1)
  void aRequestForARepositoryModelLoadsItAndItsReadinessFollows() {
    assertThat(http.get(port("node-1"), "/v2/models/m0/ready").status()).as("not loaded yet").isEqualTo(503);
    Http.Response meta = http.get(port("node-1"), "/v2/models/m0");
    assertThat(meta.status()).as(meta.text()).isEqualTo(200);
    assertThat(meta.json().getString("name")).isEqualTo("m0");

    Http.Response r = http.postJson(port("node-1"), "/v2/models/m0/infer", request(7, null));
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    assertThat(r.json().getJsonArray("outputs").getJsonObject(0).getJsonArray("data")).containsExactly(7.0, 7.0, 7.0,
        7.0);
    assertThat(r.json().getJsonObject("parameters").getString("kiln_node")).as("its local pool").isEqualTo("node-1");
    await().atMost(ServingCluster.WAIT).until(() -> http.get(port("node-1"), "/v2/models/m0/ready").status() == 200);
    assertThat(state("node-2", "m0")).isEqualTo("READY");
    assertThat(state("node-2", "m5")).isEqualTo("UNAVAILABLE");
  }

  @Test
  @Order(2)
  void anotherNodesGatewaySendsTheRequestToThePoolThatHoldsTheModel() {
    await().atMost(ServingCluster.WAIT).until(() -> cluster.node("node-2").board().pools("zoo", "1").stream()
        .anyMatch(p -> p.nodeId().equals("node-1") && p.holds("m0")));
    for (int i = 0; i < 5; i++) {
      Http.Response r = http.postJson(port("node-2"), "/v2/models/m0/infer", request(i, null));
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      assertThat(r.json().getJsonObject("parameters").getString("kiln_node")).as("the holder, not node-2's own pool")
          .isEqualTo("node-1");
    }
    Http.Response byParameter = http.postJson(port("node-2"), "/v2/models/zoo/infer", request(3, "m0"));
    assertThat(byParameter.status()).as(byParameter.text()).isEqualTo(200);
    assertThat(byParameter.json().getJsonObject("parameters").getString("kiln_node")).isEqualTo("node-1");
    assertThat(PromText.parse(http.get(port("node-2"), "/metrics").text()).sum("kiln_gateway_routes_total",
        Map.of("reason", "holder"))).isGreaterThanOrEqualTo(6);
    assertThat(PromText.parse(http.get(port("node-1"), "/metrics").text()).sum("kiln_pool_multiplex_hits_total",
        Map.of("deployment", "zoo"))).isGreaterThanOrEqualTo(6);
    Http.Response unknown = http.postJson(port("node-2"), "/v2/models/zoo/infer", request(3, "nope"));
    assertThat(unknown.status()).as(unknown.text()).isEqualTo(404);
  }

  @Test
  @Order(3)
  void theRepositoryEndpointsLoadAndUnloadAndRefuseUnknownModels() {
    Http.Response load = http.postJson(port("node-2"), "/v2/repository/models/m4/load", "");
    assertThat(load.status()).as(load.text()).isEqualTo(200);
    assertThat(state("node-1", "m4")).isEqualTo("READY");
    await().atMost(ServingCluster.WAIT).until(() -> http.get(port("node-1"), "/v2/models/m4/ready").status() == 200);

    Http.Response unload = http.postJson(port("node-1"), "/v2/repository/models/m4/unload", "");
    assertThat(unload.status()).as(unload.text()).isEqualTo(200);
    assertThat(state("node-1", "m4")).isEqualTo("UNAVAILABLE");

    Http.Response missing = http.postJson(port("node-1"), "/v2/repository/models/nope/load", "");
    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.json().getString("error")).contains("nope");
    assertThat(http.postJson(port("node-1"), "/v2/repository/models/nope/unload", "").status()).isEqualTo(404);
    JsonArray ready = new JsonArray(http.postJson(port("node-1"), "/v2/repository/index", "{\"ready\": true}").text());
    assertThat(ready.stream().map(o -> ((JsonObject) o).getString("name"))).contains("m0").doesNotContain("m4", "m5");
  }

  @Test
  @Order(4)
  void theRepositoryCallsOverGrpcAnswerAsTheHttpEndpoints() {
    try (OipGrpc grpc = new OipGrpc()) {
      int node1 = cluster.node("node-1").grpcPort();
      int node2 = cluster.node("node-2").grpcPort();
      OipGrpc.Result<RepositoryModelLoadResponse> load = grpc.call(node2, GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
          RepositoryModelLoadRequest.newBuilder().setModelName("m3").build(), Map.of());
      assertThat(load.status()).as(load.message()).isEqualTo(GrpcStatus.OK);
      assertThat(grpcStates(grpc, node1, "", false)).containsEntry("m3", "READY").containsEntry("m5", "UNAVAILABLE")
          .hasSize(6);
      assertThat(grpcStates(grpc, node1, "", true)).containsEntry("m3", "READY").doesNotContainKey("m5");
      assertThat(grpcStates(grpc, node1, "zoo", false)).hasSize(6);
      assertThat(grpcStates(grpc, node1, "elsewhere", false)).as("no such repository").isEmpty();
      await().atMost(ServingCluster.WAIT).until(() -> ServingCluster.join(grpc.at(node1)
          .modelReady(ModelReadyRequest.newBuilder().setName("m3").build()).toCompletionStage()).getReady());

      OipGrpc.Result<RepositoryModelUnloadResponse> unload = grpc.call(node1,
          GRPCInferenceServiceGrpcClient.RepositoryModelUnload,
          RepositoryModelUnloadRequest.newBuilder().setRepositoryName("zoo").setModelName("m3").build(), Map.of());
      assertThat(unload.status()).as(unload.message()).isEqualTo(GrpcStatus.OK);
      assertThat(grpcStates(grpc, node2, "", false)).containsEntry("m3", "UNAVAILABLE");
      assertThat(state("node-2", "m3")).as("HTTP agrees").isEqualTo("UNAVAILABLE");

      OipGrpc.Result<RepositoryModelLoadResponse> unknown = grpc.call(node1,
          GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
          RepositoryModelLoadRequest.newBuilder().setModelName("nope").build(), Map.of());
      assertThat(unknown.status()).isEqualTo(GrpcStatus.NOT_FOUND);
      assertThat(unknown.message()).contains("nope");
      assertThat(grpc.call(node1, GRPCInferenceServiceGrpcClient.RepositoryModelUnload,
          RepositoryModelUnloadRequest.newBuilder().setModelName("nope").build(), Map.of()).status())
          .isEqualTo(GrpcStatus.NOT_FOUND);
      assertThat(grpc.call(node1, GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
          RepositoryModelLoadRequest.newBuilder().setRepositoryName("other").setModelName("m1").build(), Map.of())
          .status()).as("a model of another repository").isEqualTo(GrpcStatus.NOT_FOUND);
      OipGrpc.Result<RepositoryModelLoadResponse> config = grpc.call(node1,
          GRPCInferenceServiceGrpcClient.RepositoryModelLoad, RepositoryModelLoadRequest.newBuilder().setModelName("m1")
              .putParameters("config", ModelRepositoryParameter.newBuilder().setStringParam("{}").build()).build(),
          Map.of());
      assertThat(config.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
      assertThat(config.message()).contains("parameters.config");
      assertThat(grpc.call(node1, GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
          RepositoryModelLoadRequest.newBuilder().build(), Map.of()).message()).contains("model_name");
    }
  }

  private static Map<String, String> grpcStates(OipGrpc grpc, int port, String repository, boolean ready) {
    OipGrpc.Result<RepositoryIndexResponse> r = grpc.call(port, GRPCInferenceServiceGrpcClient.RepositoryIndex,
        RepositoryIndexRequest.newBuilder().setRepositoryName(repository).setReady(ready).build(), Map.of());
    assertThat(r.status()).as(r.message()).isEqualTo(GrpcStatus.OK);
    Map<String, String> out = new java.util.LinkedHashMap<>();
    r.body().getModelsList().forEach(m -> {
      assertThat(m.getVersion()).isEqualTo("1");
      out.put(m.getName(), m.getState());
    });
    return out;
  }
}
