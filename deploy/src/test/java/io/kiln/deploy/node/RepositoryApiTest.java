package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.RepositoryIndexRequest;
import io.kiln.protocol.grpc.RepositoryModelLoadRequest;
import io.kiln.protocol.grpc.RepositoryModelUnloadRequest;
import io.kiln.serve.DeploymentStatus;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.net.SocketAddress;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.ServiceMethod;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The OIP repository endpoints (HTTP and gRPC) behind a management token, on a real gateway and serve controller. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class RepositoryApiTest {

  private static final String TOKEN = "s3cret";
  private static final String YAML = """
      deployments:
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

  private ManagedNode node;

  @BeforeAll
  void start() {
    node = new ManagedNode(TOKEN);
    HttpResponse<Buffer> applied = node.call(HttpMethod.POST, "/api/v1/deployments", TOKEN, YAML);
    assertThat(applied.statusCode()).as(applied.bodyAsString()).isEqualTo(200);
    await().atMost(ManagedNode.WAIT).until(() -> node.serve.status("zoo")
        .filter(s -> s.phase() == DeploymentStatus.Phase.READY).isPresent());
    await().atMost(ManagedNode.WAIT).until(() -> !node.board.pools("zoo", "1").isEmpty());
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
  }

  @Test
  void withoutTheTokenEveryRepositoryEndpointIs401() {
    assertThat(node.call(HttpMethod.POST, "/v2/repository/index", null, "{}").statusCode()).isEqualTo(401);
    assertThat(node.call(HttpMethod.POST, "/v2/repository/models/a/load", null, "").statusCode()).isEqualTo(401);
    assertThat(node.call(HttpMethod.POST, "/v2/repository/models/a/unload", "wrong", "").statusCode()).isEqualTo(401);
  }

  @Test
  void withItLoadingOneModelEvictsTheOtherFromAOneModelWorker() {
    assertThat(node.call(HttpMethod.POST, "/v2/repository/models/a/load", TOKEN, "").statusCode()).isEqualTo(200);
    assertThat(states()).containsExactly("a:READY", "b:UNAVAILABLE");
    assertThat(node.call(HttpMethod.POST, "/v2/repository/models/b/load", TOKEN, "").statusCode()).isEqualTo(200);
    assertThat(states()).containsExactly("a:UNAVAILABLE", "b:READY");
    assertThat(node.call(HttpMethod.POST, "/v2/repository/models/c/load", TOKEN, "").statusCode()).isEqualTo(404);
  }

  private java.util.List<String> states() {
    HttpResponse<Buffer> r = node.call(HttpMethod.POST, "/v2/repository/index", TOKEN, "");
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    return new JsonArray(r.bodyAsString()).stream()
        .map(o -> ((io.vertx.core.json.JsonObject) o).getString("name") + ":"
            + ((io.vertx.core.json.JsonObject) o).getString("state")).toList();
  }

  @Test
  void overGrpcTheTokenTravelsAsAuthorizationMetadata() {
    Vertx vertx = Vertx.vertx();
    GrpcClient grpc = GrpcClient.client(vertx);
    try {
      for (Map<String, String> metadata : List.of(Map.<String, String>of(), Map.of("authorization", "Bearer wrong"),
          Map.of("authorization", TOKEN))) {
        assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryIndex, RepositoryIndexRequest.getDefaultInstance(),
            metadata)).as(metadata.toString()).startsWith("UNAUTHENTICATED");
        assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
            RepositoryModelLoadRequest.newBuilder().setModelName("a").build(), metadata)).startsWith("UNAUTHENTICATED");
        assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryModelUnload,
            RepositoryModelUnloadRequest.newBuilder().setModelName("a").build(), metadata)).startsWith("UNAUTHENTICATED");
      }
      Map<String, String> auth = Map.of("authorization", "Bearer " + TOKEN);
      assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
          RepositoryModelLoadRequest.newBuilder().setModelName("b").build(), auth)).isEqualTo("OK ");
      assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryIndex,
          RepositoryIndexRequest.newBuilder().setReady(true).build(), auth)).isEqualTo("OK models { name: \"b\" version: \"1\" state: \"READY\" }");
      assertThat(states()).as("HTTP sees the same").contains("b:READY");
      assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryModelUnload,
          RepositoryModelUnloadRequest.newBuilder().setModelName("b").build(), auth)).isEqualTo("OK ");
      assertThat(states()).contains("b:UNAVAILABLE");
      assertThat(grpc(grpc, GRPCInferenceServiceGrpcClient.RepositoryModelLoad,
          RepositoryModelLoadRequest.newBuilder().setModelName("c").build(), auth)).startsWith("NOT_FOUND");
    } finally {
      ManagedNode.join(grpc.close().toCompletionStage());
      ManagedNode.join(vertx.close().toCompletionStage());
    }
  }

  /** The call's status, then its reply's text form and its status message, if any. */
  private <Q, R extends com.google.protobuf.Message> String grpc(GrpcClient grpc, ServiceMethod<R, Q> method, Q request,
                                                               Map<String, String> metadata) {
    return ManagedNode.join(grpc.request(SocketAddress.inetSocketAddress(node.gateway.grpcPort(), "127.0.0.1"), method)
        .compose(req -> {
          metadata.forEach((k, v) -> req.headers().set(k, v));
          req.end(request);
          return req.response().compose(resp -> {
            List<R> messages = new java.util.ArrayList<>();
            resp.handler(messages::add);
            return resp.end().transform(ar -> Future.succeededFuture(resp.status().name()
                + (messages.isEmpty() ? "" : " " + com.google.protobuf.TextFormat.shortDebugString(messages.get(0)))
                + (resp.statusMessage() == null ? "" : " " + resp.statusMessage())));
          });
        }).toCompletionStage());
  }
}
