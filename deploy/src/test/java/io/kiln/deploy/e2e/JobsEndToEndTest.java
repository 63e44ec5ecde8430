package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch jobs through the REST API of assembled nodes: three {@code ServingNode}s, the example clips of
 * {@code deploy/examples/pipeline/inputs} through an identity deployment of the MLP's input shape, the job
 * file of {@code deploy/examples/jobs} with its output moved to a temporary folder.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class JobsEndToEndTest {

  private static final String YAML = """
      deployments:
        - name: mlp
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: input, datatype: FP32, shape: [-1, 64]}]
            outputs: [{name: output, datatype: FP32, shape: [-1, 64]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
      """;

  private final Http http = new Http();
  private ServingCluster cluster;

  @TempDir
  Path tmp;

  @BeforeAll
  void deploy() {
    cluster = ServingCluster.start("node-1", "node-2", "node-3");
    cluster.deploy(YAML);
    cluster.awaitReady("mlp", 3);
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

  /** The example job file, its paths made absolute, its output in {@code out}. */
  private Path jobFile(Path out, String name) throws Exception {
    Path examples = Path.of("examples").toAbsolutePath();
    String yaml = Files.readString(examples.resolve("jobs/clips.yaml"))
        .replace("name: clips", "name: " + name)
        .replace("../pipeline/inputs", examples.resolve("pipeline/inputs").toString())
        .replace("../../../.kiln/jobs/clips", out.toString());
    Path f = tmp.resolve(name + ".yaml");
    Files.writeString(f, yaml);
    return f;
  }

  private Http.Response submit(String node, Path file) throws Exception {
    return http.post(port(node), "/api/v1/jobs?source=" + URLEncoder.encode(file.toString(), StandardCharsets.UTF_8),
        "application/yaml", Files.readAllBytes(file));
  }

  private JsonObject awaitEnd(String node, String id) {
    await().atMost(ServingCluster.WAIT).until(() -> {
      Http.Response r = http.get(port(node), "/api/v1/jobs/" + id);
      return r.status() == 200 && !r.json().getString("state").equals("RUNNING");
    });
    return http.get(port(node), "/api/v1/jobs/" + id).json();
  }

  @Test
  void theExampleJobRunsOverTheClipsOnThreeNodesThroughTheRestApi() throws Exception {
    Path out = tmp.resolve("out");
    Http.Response r = submit("node-2", jobFile(out, "clips"));
    assertThat(r.status()).as(r.text()).isEqualTo(202);
    String id = r.json().getString("job_id");
    assertThat(r.json().getInteger("inputs")).isEqualTo(3);
    JsonObject s = awaitEnd("node-3", id);
    assertThat(s.getString("state")).as(s.encode()).isEqualTo("SUCCEEDED");
    assertThat(s.getInteger("done")).isEqualTo(3);
    assertThat(s.getString("coordinator")).isEqualTo("node-2");
    Set<String> uris = new HashSet<>();
    try (Stream<Path> files = Files.list(out)) {
      for (Path p : files.filter(p -> p.getFileName().toString().matches("[0-9a-f]{64}\\.json")).toList()) {
        JsonObject res = new JsonObject(Files.readString(p));
        assertThat(res.getString("infer_node")).isEqualTo(res.getString("fetch_node"));
        uris.add(res.getString("uri"));
        JsonArray data = res.getJsonArray("outputs").getJsonObject(0).getJsonArray("data");
        assertThat(data.size() % 64).isZero();
      }
    }
    assertThat(uris).hasSize(3).allMatch(u -> u.endsWith(".f32"));
    // The list, the logs, and a resume that finds nothing left to do.
    JsonObject list = http.get(port("node-1"), "/api/v1/jobs").json();
    assertThat(list.getJsonArray("jobs").stream().map(o -> ((JsonObject) o).getString("id"))).contains(id);
    JsonObject logs = http.get(port("node-1"), "/api/v1/jobs/" + id + "/logs").json();
    assertThat(logs.getJsonArray("logs").encode()).contains("succeeded");
    assertThat(http.post(port("node-1"), "/api/v1/jobs/" + id + "/resume", "application/json", new byte[0]).status())
        .isEqualTo(202);
    JsonObject again = awaitEnd("node-1", id);
    assertThat(again.getString("state")).isEqualTo("SUCCEEDED");
    assertThat(again.getInteger("skipped")).isEqualTo(3);
  }

  @Test
  void anInvalidJobFileIsRefusedWithLineAndColumnAndStartsNothing() throws Exception {
    int before = http.get(port("node-1"), "/api/v1/jobs").json().getJsonArray("jobs").size();
    Path bad = tmp.resolve("bad.yaml");
    Files.writeString(bad, "name: bad\ndeployment: mlp\ninputs: {uris: [https://x/a]}\nouptut: " + tmp + "\n");
    Http.Response r = submit("node-1", bad);
    assertThat(r.status()).isEqualTo(400);
    List<Object> problems = r.json().getJsonArray("problems").getList();
    assertThat(r.json().getJsonArray("problems").stream().map(o -> (JsonObject) o)
        .filter(p -> p.getInteger("line") == 4 && p.getInteger("column") == 1 && p.getString("path").equals("ouptut")))
        .as(problems.toString()).hasSize(1);
    assertThat(http.get(port("node-1"), "/api/v1/jobs").json().getJsonArray("jobs").size()).isEqualTo(before);
    assertThat(http.get(port("node-1"), "/api/v1/jobs/nope").status()).isEqualTo(404);
    assertThat(http.post(port("node-1"), "/api/v1/jobs/nope/cancel", "application/json", new byte[0]).status())
        .isEqualTo(404);
    Http.Response big = http.post(port("node-1"), "/api/v1/jobs", "application/yaml", new byte[(1 << 20) + 10]);
    assertThat(big.status()).isEqualTo(413);
  }
}
