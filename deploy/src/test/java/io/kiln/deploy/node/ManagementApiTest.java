package io.kiln.deploy.node;

import static io.kiln.deploy.node.ManagedNode.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.kiln.control.ManagementApi;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.Problem;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The management REST API on a real gateway over loopback, with a real serve controller behind it. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class ManagementApiTest {

  private static final String DEPLOYMENTS = "/api/v1/deployments";

  static String identity(String name, String workersLine) {
    return """
        deployments:
          - name: %s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: x, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: y, datatype: FP32, shape: [-1, 4]}]
            pool:
              %s
        """.formatted(name, workersLine);
  }

  private ManagedNode node;

  @BeforeAll
  void start() {
    node = new ManagedNode(null);
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
  }

  @Test
  void postingValidYamlAppliesItAndAnswersThePlan() {
    HttpResponse<Buffer> r = node.call(HttpMethod.POST, DEPLOYMENTS, identity("applied", "workers_per_node: 2"));

    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    JsonObject body = json(r);
    assertThat(body.getBoolean("applied")).isTrue();
    assertThat(body.getJsonArray("deployments")).containsExactly("applied@1");
    JsonObject plan = body.getJsonObject("plan").getJsonArray("deployments").getJsonObject(0);
    assertThat(plan.getString("name")).isEqualTo("applied");
    assertThat(body.getString("planText")).contains("applied");
    await().atMost(ManagedNode.WAIT).until(() -> node.serve.status("applied")
        .filter(s -> s.phase() == DeploymentStatus.Phase.READY).isPresent());

    JsonObject listed = json(node.call(HttpMethod.GET, DEPLOYMENTS, null));
    JsonObject entry = find(listed.getJsonArray("deployments"), "applied");
    assertThat(entry.getJsonObject("status").getString("phase")).isEqualTo("READY");
    assertThat(entry.getJsonObject("status").getString("servingVersion")).isEqualTo("1");

    HttpResponse<Buffer> one = node.call(HttpMethod.GET, DEPLOYMENTS + "/applied", null);
    assertThat(one.statusCode()).isEqualTo(200);
    assertThat(json(one).getJsonObject("spec").getString("name")).isEqualTo("applied");

    JsonObject status = json(node.call(HttpMethod.GET, "/api/v1/status", null));
    assertThat(status.getString("leader")).isEqualTo("node-a");
    assertThat(status.getJsonArray("nodes")).hasSize(1);
    assertThat(status.getJsonArray("actors").stream().map(a -> ((JsonObject) a).getString("name")))
        .contains("kiln/pool/applied@1/node-a");
    // The answering node's own table: the live named actors it hosts, the pool's manager and worker among them.
    assertThat(status.getJsonArray("localActors").stream().map(a -> (JsonObject) a)
        .filter(a -> a.getString("name").startsWith("kiln/pool/applied@1/node-a")))
        .allSatisfy(a -> assertThat(a.getString("nodeId")).isEqualTo("node-a"))
        .extracting(a -> a.getString("name"))
        .contains("kiln/pool/applied@1/node-a", "kiln/pool/applied@1/node-a/worker-0");

    // The gateway serves it.
    HttpResponse<Buffer> infer = node.call(HttpMethod.POST, "/v2/models/applied/infer",
        OipRequest.fp32("x", new long[] {1, 4}, 1, 2, 3, 4).json());
    assertThat(infer.statusCode()).as(infer.bodyAsString()).isEqualTo(200);
    assertThat(json(infer).getJsonArray("outputs").getJsonObject(0).getJsonArray("data")).containsExactly(1.0, 2.0, 3.0,
        4.0);
  }

  @Test
  void aDryRunAnswersThePlanAndChangesNothing() {
    HttpResponse<Buffer> r = node.call(HttpMethod.POST, DEPLOYMENTS + "?dry_run=true",
        identity("dry", "workers_per_node: 1"));

    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(json(r).getBoolean("applied")).isFalse();
    assertThat(json(r).getJsonObject("plan").getJsonArray("deployments").getJsonObject(0).getString("name"))
        .isEqualTo("dry");
    assertThat(node.serve.desired()).doesNotContainKey("dry");
    assertThat(node.call(HttpMethod.GET, DEPLOYMENTS + "/dry", null).statusCode()).isEqualTo(404);
  }

  @Test
  void invalidYamlIs400WithEveryProblemAndItsLineAndColumn() {
    String yaml = identity("broken", "workers_per_node: 0\n      frobnicate: true");
    List<Problem> expected = catchThrowableOfType(DeploymentValidationException.class,
        () -> new DeploymentLoader().load(yaml, Path.of("request.yaml"))).problems();

    HttpResponse<Buffer> r = node.call(HttpMethod.POST, DEPLOYMENTS, yaml);

    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(400);
    JsonArray problems = json(r).getJsonArray("problems");
    assertThat(problems).hasSize(expected.size()).hasSizeGreaterThanOrEqualTo(2);
    for (int i = 0; i < expected.size(); i++) {
      JsonObject p = problems.getJsonObject(i);
      assertThat(p.getInteger("line")).isEqualTo(expected.get(i).line());
      assertThat(p.getInteger("column")).isEqualTo(expected.get(i).column());
      assertThat(p.getString("path")).isEqualTo(expected.get(i).path());
      assertThat(p.getString("message")).isEqualTo(expected.get(i).message());
    }
    assertThat(problems.stream().map(p -> ((JsonObject) p).getInteger("line"))).contains(10, 11);
    assertThat(node.serve.desired()).doesNotContainKey("broken");

    HttpResponse<Buffer> notYaml = node.call(HttpMethod.POST, DEPLOYMENTS, "deployments: [");
    assertThat(notYaml.statusCode()).isEqualTo(400);
    assertThat(json(notYaml).getJsonArray("problems").getJsonObject(0).getInteger("line")).isPositive();

    assertThat(node.call(HttpMethod.POST, DEPLOYMENTS, "  ").statusCode()).isEqualTo(400);
    HttpResponse<Buffer> badSource = node.call(HttpMethod.POST, DEPLOYMENTS + "?source=%00",
        identity("src", "workers_per_node: 1"));
    assertThat(badSource.statusCode()).as(badSource.bodyAsString()).isEqualTo(400);
    assertThat(json(badSource).getString("error")).contains("source");
  }

  @Test
  void unknownEndpointsAndMethodsAnswerJsonErrors() {
    HttpResponse<Buffer> missing = node.call(HttpMethod.GET, "/api/v1/nope", null);
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(json(missing).getString("error")).isNotBlank();
    HttpResponse<Buffer> wrongMethod = node.call(HttpMethod.PUT, "/api/v1/status", "x");
    assertThat(wrongMethod.statusCode()).isIn(404, 405);
    assertThat(json(wrongMethod).getString("error")).isNotBlank();
    HttpResponse<Buffer> unknown = node.call(HttpMethod.GET, DEPLOYMENTS + "/nothing-here", null);
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(json(unknown).getString("error")).contains("nothing-here");
  }

  @Test
  void yamlSentAsAFormBodyIsStillReadAsYaml() {
    // curl -d sends Content-Type: application/x-www-form-urlencoded; Vert.x would parse that as form fields.
    String yaml = identity("formed", "workers_per_node: 1") + "#" + "x".repeat(10_000) + "\n";
    HttpResponse<Buffer> r = ManagedNode.join(node.http.post(node.gateway.httpPort(), "127.0.0.1",
        DEPLOYMENTS + "?dry_run=1").putHeader("Content-Type", "application/x-www-form-urlencoded")
        .sendBuffer(Buffer.buffer(yaml)).toCompletionStage());

    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(json(r).getBoolean("applied")).isFalse();
    assertThat(json(r).getJsonArray("deployments")).containsExactly("formed@1");
  }

  @Test
  void aBodyOverOneMebibyteIs413() {
    String yaml = identity("big", "workers_per_node: 1") + "#" + "x".repeat(ManagementApi.MAX_YAML_BYTES) + "\n";

    HttpResponse<Buffer> r = node.call(HttpMethod.POST, DEPLOYMENTS, yaml);

    assertThat(r.statusCode()).isEqualTo(413);
    assertThat(json(r).getString("error")).contains("limit");
    assertThat(node.serve.desired()).doesNotContainKey("big");
  }

  @Test
  void deletingDrainsAndRemovesAndAnUnknownNameIs404() {
    assertThat(node.call(HttpMethod.POST, DEPLOYMENTS, identity("doomed", "workers_per_node: 1")).statusCode())
        .isEqualTo(200);
    await().atMost(ManagedNode.WAIT).until(() -> node.serve.status("doomed")
        .filter(s -> s.phase() == DeploymentStatus.Phase.READY).isPresent());

    HttpResponse<Buffer> r = node.call(HttpMethod.DELETE, DEPLOYMENTS + "/doomed", null);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r).getString("deleting")).isEqualTo("doomed");
    await().atMost(ManagedNode.WAIT).until(() -> node.call(HttpMethod.GET, DEPLOYMENTS + "/doomed", null)
        .statusCode() == 404);
    assertThat(find(json(node.call(HttpMethod.GET, DEPLOYMENTS, null)).getJsonArray("deployments"), "doomed")).isNull();

    HttpResponse<Buffer> unknown = node.call(HttpMethod.DELETE, DEPLOYMENTS + "/nothing-here", null);
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(json(unknown).getString("error")).contains("nothing-here");
  }

  @Test
  void withATokenEveryCallNeedsIt() {
    try (ManagedNode guarded = new ManagedNode("s3cret-token")) {
      for (String uri : List.of(DEPLOYMENTS, "/api/v1/status", DEPLOYMENTS + "/x")) {
        HttpResponse<Buffer> none = guarded.call(HttpMethod.GET, uri, null, null);
        assertThat(none.statusCode()).as(uri).isEqualTo(401);
        assertThat(none.getHeader("WWW-Authenticate")).isEqualTo("Bearer");
        assertThat(json(none).getString("error")).contains("token");
        assertThat(guarded.call(HttpMethod.GET, uri, "wrong", null).statusCode()).as(uri).isEqualTo(401);
      }
      String yaml = identity("guarded", "workers_per_node: 1");
      assertThat(guarded.call(HttpMethod.POST, DEPLOYMENTS, "s3cret-tokenX", yaml).statusCode()).isEqualTo(401);
      assertThat(guarded.call(HttpMethod.DELETE, DEPLOYMENTS + "/guarded", null, null).statusCode()).isEqualTo(401);
      assertThat(guarded.serve.desired()).isEmpty();

      assertThat(guarded.call(HttpMethod.GET, "/api/v1/status", "s3cret-token", null).statusCode()).isEqualTo(200);
      assertThat(guarded.call(HttpMethod.POST, DEPLOYMENTS, "s3cret-token", yaml).statusCode()).isEqualTo(200);
      assertThat(guarded.serve.desired()).containsKey("guarded");
      // The inference API is not the management API: no token there.
      assertThat(guarded.call(HttpMethod.GET, "/v2/health/live", null, null).statusCode()).isEqualTo(200);
    }
  }

  private static JsonObject find(JsonArray deployments, String name) {
    for (int i = 0; i < deployments.size(); i++) {
      JsonObject d = deployments.getJsonObject(i);
      if (name.equals(d.getJsonObject("spec").getString("name"))) {
        return d;
      }
    }
    return null;
  }
}
