package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.serve.DeploymentStatus;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.ext.web.client.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The OIP repository endpoints behind a management token, on a real gateway and serve controller. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
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
}
