package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import io.kiln.pipelines.PipelineSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kiln deploy --prune} (and {@code POST /api/v1/deployments?prune=true}) on a real node: what the file no
 * longer declares is deleted, deployments and pipelines alike; a dry run only says so; an invalid file prunes nothing.
 * Its own node: pruning deletes everything else stored.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class DeployPruneTest {

  static String deployment(String name) {
    return """
          - name: %s
            version: "1"
            model:
              uri: builtin:identity
              engine: Builtin
              inputs:  [{name: input, datatype: FP32, shape: [-1, 4]}]
              outputs: [{name: output, datatype: FP32, shape: [-1, 4]}]
            pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
        """.formatted(name);
  }

  static final String PIPELINE = """
      pipelines:
        - name: flow
          steps:
            - name: fetch
              fetch: "${input.media_uri}"
            - name: analyse
              infer: {deployment: keep}
      """;

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

  private boolean pipelineStored(String name) {
    return ManagedNode.join(node.pipelines.pipelines()).stream().map(PipelineSpec::name).anyMatch(name::equals);
  }

  @Test
  void whatTheFileNoLongerDeclaresIsDeletedAndADryRunOnlySaysSo(@TempDir Path dir) throws IOException {
    Path both = Files.writeString(dir.resolve("both.yaml"),
        "deployments:\n" + deployment("keep") + deployment("gone") + PIPELINE);
    CliRun first = CliRun.kiln(node, "deploy", both.toString(), "--prune");
    assertThat(first.code()).as(first.err()).isZero();
    assertThat(first.out()).contains("prune: nothing to delete");
    assertThat(node.serve.desired()).containsKeys("keep", "gone");
    assertThat(pipelineStored("flow")).isTrue();

    Path one = Files.writeString(dir.resolve("one.yaml"), "deployments:\n" + deployment("keep"));
    CliRun dry = CliRun.kiln(node, "deploy", one.toString(), "--prune", "--dry-run");
    assertThat(dry.code()).as(dry.err()).isZero();
    assertThat(dry.out()).contains("prune: would delete pipeline flow", "prune: would delete deployment gone",
        "dry run: nothing was changed").doesNotContain("would delete deployment keep");
    assertThat(node.serve.desired()).containsKeys("keep", "gone");
    assertThat(pipelineStored("flow")).isTrue();

    CliRun pruned = CliRun.kiln(node, "deploy", one.toString(), "--prune");
    assertThat(pruned.code()).as(pruned.err()).isZero();
    assertThat(pruned.out()).contains("prune: deleted pipeline flow", "prune: deleted deployment gone");
    assertThat(pipelineStored("flow")).isFalse();
    await().atMost(ManagedNode.WAIT).until(() -> !node.serve.desired().containsKey("gone"));
    assertThat(node.serve.desired()).containsKey("keep");

    // Without --prune, the file adds and changes only.
    Path other = Files.writeString(dir.resolve("other.yaml"), "deployments:\n" + deployment("other"));
    CliRun plain = CliRun.kiln(node, "deploy", other.toString());
    assertThat(plain.code()).as(plain.err()).isZero();
    assertThat(plain.out()).doesNotContain("prune");
    assertThat(node.serve.desired()).containsKeys("keep", "other");
  }

  @Test
  void theApiAnswersWhatItPrunedAndAnInvalidFilePrunesNothing() {
    String keepAndApi = "deployments:\n" + deployment("keep") + deployment("api");
    HttpResponse<Buffer> applied = node.call(HttpMethod.POST, "/api/v1/deployments", keepAndApi);
    assertThat(applied.statusCode()).as(applied.bodyAsString()).isEqualTo(200);
    assertThat(applied.bodyAsJsonObject().containsKey("pruned")).isFalse();

    // A pipeline naming a deployment nobody has: the whole file is refused, before any prune.
    HttpResponse<Buffer> invalid = node.call(HttpMethod.POST, "/api/v1/deployments?prune=true",
        "deployments:\n" + deployment("keep") + PIPELINE.replace("keep", "nobody"));
    assertThat(invalid.statusCode()).as(invalid.bodyAsString()).isEqualTo(400);
    assertThat(node.serve.desired()).containsKeys("keep", "api");

    HttpResponse<Buffer> dry = node.call(HttpMethod.POST, "/api/v1/deployments?prune=1&dry_run=true",
        "deployments:\n" + deployment("keep"));
    JsonObject plan = dry.bodyAsJsonObject().getJsonObject("pruned");
    assertThat(plan.getJsonArray("deployments")).contains("api").doesNotContain("keep");
    assertThat(node.serve.desired()).containsKey("api");

    HttpResponse<Buffer> pruned = node.call(HttpMethod.POST, "/api/v1/deployments?prune=true",
        "deployments:\n" + deployment("keep"));
    assertThat(pruned.statusCode()).as(pruned.bodyAsString()).isEqualTo(200);
    assertThat(pruned.bodyAsJsonObject().getJsonObject("pruned").getJsonArray("deployments")).contains("api");
    await().atMost(ManagedNode.WAIT).until(() -> !node.serve.desired().containsKey("api"));
    assertThat(node.serve.desired()).containsKey("keep");

    // A deployment only in the cluster that the file's pipeline infers on is what the file needs: kept.
    assertThat(node.call(HttpMethod.POST, "/api/v1/deployments", "deployments:\n" + deployment("used"))
        .statusCode()).isEqualTo(200);
    HttpResponse<Buffer> needed = node.call(HttpMethod.POST, "/api/v1/deployments?prune=true",
        "deployments:\n" + deployment("keep") + PIPELINE.replace("keep", "used"));
    assertThat(needed.statusCode()).as(needed.bodyAsString()).isEqualTo(200);
    assertThat(needed.bodyAsJsonObject().getJsonObject("pruned").getJsonArray("deployments")).isEmpty();
    assertThat(node.serve.desired()).containsKeys("keep", "used");

    // Leave only "keep" for the other test of this node.
    HttpResponse<Buffer> reset = node.call(HttpMethod.POST, "/api/v1/deployments?prune=true",
        "deployments:\n" + deployment("keep"));
    assertThat(reset.bodyAsJsonObject().getJsonObject("pruned").getJsonArray("pipelines")).containsExactly("flow");
    await().atMost(ManagedNode.WAIT).until(() -> !node.serve.desired().containsKey("used"));
  }
}
