package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.gateway.GatewayOptions;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.LocalCluster;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.runtime.gpu.GpuSampler;
import io.kiln.serve.DeploymentStatus;
import io.kiln.testkit.OipRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's page and data endpoint on two real serving nodes of an in-process cluster, with a management
 * token: the page and its assets, the token, every bad parameter answered 400 naming it, the JSON's shape, requests
 * sent through one node's gateway counted in the other node's series (cluster-wide), one node's GPUs shown by the
 * other, a pipeline run with its steps and nodes, and a crashed node shown down.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class DashboardApiTest {

  static final String TOKEN = "dash-token";
  static final Duration WAIT = Duration.ofSeconds(90);
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
      pipelines:
        - name: look
          steps:
            - name: fetch
              fetch: "${input.media_uri}"
      """;

  final LocalCluster cluster = LocalCluster.create();
  ServingNode a;
  ServingNode b;
  @TempDir
  static Path home;

  @BeforeAll
  void start() throws Exception {
    // b has one (pretend) GPU: a process standing in for nvidia-smi answers its devices query.
    Path smi = home.resolve("nvidia-smi");
    Files.writeString(smi, "#!/bin/sh\ncase \"$1\" in\n  --query-gpu=*) echo \"0, 2048, 81920, 37\";;\nesac\n");
    Files.setPosixFilePermissions(smi, PosixFilePermissions.fromString("rwxr-xr-x"));
    a = node("dash-a", true, Resources.cpu(2), null);
    b = node("dash-b", false, Resources.cpu(2).withGpu(1), new GpuSampling(List.of(0),
        GpuSampler.Options.of(smi.toString()).withPeriod(Duration.ofSeconds(1))));
    HttpResponse<String> applied = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.httpPort()
        + "/api/v1/deployments")).header("Authorization", "Bearer " + TOKEN)
        .POST(HttpRequest.BodyPublishers.ofString(YAML)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
    await().atMost(WAIT).until(() -> a.serve().status("echo").filter(s -> s.phase() == DeploymentStatus.Phase.READY
        && s.pools().stream().filter(DeploymentStatus.PoolState::ready).count() == 2).isPresent());
  }

  private ServingNode node(String id, boolean jvm, Resources resources, GpuSampling gpus) {
    KilnRuntime rt = ManagedNode.join(cluster.startNode(new NodeOptions(id, "127.0.0.1", resources, Map.of())));
    return ManagedNode.join(ServingNode.start(rt, GatewayOptions.builder().host("127.0.0.1").httpPort(0).grpcPort(0)
        .bindJvmMetrics(jvm).build(), TOKEN, home, gpus));
  }

  @Test
  void aNodesGpusReachAnotherNodesDashboard() throws Exception {
    await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() ->
        find(data(a).path("nodes"), "id", "dash-b").path("gpus").size() == 1);
    JsonNode b = find(data(a).path("nodes"), "id", "dash-b");
    JsonNode gpu = b.path("gpus").get(0);
    assertThat(gpu.path("index").asInt()).isZero();
    assertThat(gpu.path("utilization").asDouble()).isCloseTo(0.37, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(gpu.path("memoryTotalBytes").asDouble()).isEqualTo(81920.0 * 1024 * 1024);
    assertThat(b.path("total").path("GPU").asDouble()).isEqualTo(1.0);
    assertThat(find(data(a).path("nodes"), "id", "dash-a").path("gpus")).isEmpty();
  }

  @AfterAll
  void stop() {
    for (ServingNode n : new ServingNode[] {a, b}) {
      if (n != null) {
        n.close();
      }
    }
    cluster.close();
  }

  static HttpResponse<String> get(ServingNode n, String path, String token) throws Exception {
    HttpRequest.Builder r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + n.httpPort() + path))
        .timeout(Duration.ofSeconds(30)).GET();
    if (token != null) {
      r.header("Authorization", "Bearer " + token);
    }
    return HTTP.send(r.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode data(ServingNode n) throws Exception {
    HttpResponse<String> r = get(n, "/api/v1/dashboard", TOKEN);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  @Test
  void thePageAndItsAssetsAreServedWithoutATokenAndHoldNoData() throws Exception {
    HttpResponse<String> page = get(a, "/dashboard?token=" + TOKEN, null);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/html"));
    assertThat(page.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(
        c -> assertThat(c).contains("default-src 'none'").contains("script-src 'self'"));
    assertThat(page.headers().firstValue("Referrer-Policy")).hasValue("no-referrer");
    assertThat(page.body()).contains("/dashboard/dashboard.js").doesNotContain(TOKEN).doesNotContain("http://")
        .doesNotContain("https://");
    HttpResponse<String> js = get(a, "/dashboard/dashboard.js", null);
    assertThat(js.statusCode()).isEqualTo(200);
    assertThat(js.body()).contains("sessionStorage").contains("Authorization").contains("/api/v1/dashboard");
    assertThat(get(a, "/dashboard/dashboard.css", null).statusCode()).isEqualTo(200);
  }

  @Test
  void theDataNeedsTheToken() throws Exception {
    assertThat(get(a, "/api/v1/dashboard", null).statusCode()).isEqualTo(401);
    assertThat(get(a, "/api/v1/dashboard", TOKEN + "x").statusCode()).isEqualTo(401);
    assertThat(get(a, "/api/v1/dashboard", TOKEN).statusCode()).isEqualTo(200);
  }

  @Test
  void badParametersAreRefusedNamingThem() throws Exception {
    assertBad(get(a, "/api/v1/dashboard?window=abc", TOKEN), "window");
    assertBad(get(a, "/api/v1/dashboard?window=5", TOKEN), "window");
    assertBad(get(a, "/api/v1/dashboard?window=301", TOKEN), "window");
    assertBad(get(a, "/api/v1/dashboard?window=60&window=70", TOKEN), "window");
    assertBad(get(a, "/api/v1/dashboard?windows=60", TOKEN), "windows");
    assertBad(get(a, "/dashboard?token=" + "t".repeat(513), null), "token");
    assertBad(get(a, "/dashboard?token=a%20b", null), "token");
    assertBad(get(a, "/dashboard?theme=dark", null), "theme");
    assertBad(get(a, "/dashboard/dashboard.js?v=1", null), "v");
    assertBad(get(a, "/api/v1/dashboard?" + "q".repeat(3000) + "=1", TOKEN), "query string");
    assertThat(get(a, "/api/v1/dashboard?window=60", TOKEN).statusCode()).isEqualTo(200);
  }

  private static void assertBad(HttpResponse<String> r, String named) throws Exception {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(JSON.readTree(r.body()).path("error").asText()).contains(named);
  }

  @Test
  void theDataShowsTheClusterAndCountsRequestsOfEveryNode() throws Exception {
    JsonNode d = data(a);
    assertThat(d.path("node").asText()).isEqualTo("dash-a");
    assertThat(d.path("leader").asText()).isEqualTo("dash-a");
    assertThat(d.path("nodes")).extracting(n -> n.path("id").asText()).contains("dash-a", "dash-b");
    JsonNode echo = find(d.path("deployments"), "name", "echo");
    assertThat(echo.path("phase").asText()).isEqualTo("READY");
    assertThat(echo.path("servingVersion").asText()).isEqualTo("1");
    assertThat(echo.path("pools")).hasSize(2);
    assertThat(echo.path("workers")).hasSize(2).allSatisfy(w -> assertThat(w.path("state").asText()).isEqualTo("ALIVE"));
    assertThat(echo.path("restarts").asInt()).isZero();
    assertThat(d.path("pipelineRuns").isArray()).isTrue();
    assertThat(d.path("jobs").isArray()).isTrue();
    JsonNode series = d.path("series");
    assertThat(series.path("end").asLong() - series.path("start").asLong() + 1).isEqualTo(300);
    assertThat(series.path("models").path("echo").path("rate")).hasSize(300);
    assertThat(data60().path("series").path("models").path("echo").path("p99")).hasSize(60);

    // Requests through b's gateway only; a's dashboard counts them (b's samples, asked over the event bus).
    int sent = 40;
    for (int i = 0; i < sent; i++) {
      HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.httpPort()
          + "/v2/models/echo/infer")).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers
          .ofString(OipRequest.fp32("x", new long[] {1, 2}, 1f, 2f).json())).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }
    await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() -> sum(data(a), "rate") >= sent);
    JsonNode after = data(a).path("series").path("models").path("echo");
    assertThat(sum(after, "errors")).isZero();
    JsonNode p99 = null;
    for (JsonNode v : after.path("p99")) {
      if (!v.isNull()) {
        p99 = v;
      }
    }
    assertThat(p99).isNotNull();
    assertThat(p99.asDouble()).isPositive();
  }

  @Test
  void pipelineRunsShowWithTheirStepsAndNodes() throws Exception {
    Path media = Files.write(home.resolve("clip.f32"), new byte[16]);
    HttpResponse<String> started = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.httpPort()
        + "/api/v1/pipelines/look/runs")).header("Authorization", "Bearer " + TOKEN)
        .POST(HttpRequest.BodyPublishers.ofString("{\"input\": {\"media_uri\": \"" + media.toUri() + "\"}}"))
        .build(), HttpResponse.BodyHandlers.ofString());
    assertThat(started.statusCode()).as(started.body()).isEqualTo(202);
    String id = JSON.readTree(started.body()).path("run_id").asText();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() -> {
      for (JsonNode r : data(a).path("pipelineRuns")) {
        if (r.path("runId").asText().equals(id)) {
          return r.path("state").asText().equals("SUCCEEDED");
        }
      }
      return false;
    });
    JsonNode run = find(data(a).path("pipelineRuns"), "runId", id);
    assertThat(run.path("pipeline").asText()).isEqualTo("look");
    assertThat(run.path("coordinator").asText()).isEqualTo("dash-b");
    assertThat(run.path("steps")).extracting(st -> st.path("name").asText()).containsExactly("fetch");
    assertThat(run.path("steps")).allSatisfy(st -> {
      assertThat(st.path("state").asText()).isEqualTo("SUCCEEDED");
      assertThat(st.path("node").asText()).isIn("dash-a", "dash-b");
    });
  }

  private JsonNode data60() throws Exception {
    return JSON.readTree(get(a, "/api/v1/dashboard?window=60", TOKEN).body());
  }

  private static long sum(JsonNode dataOrModel, String field) {
    JsonNode m = dataOrModel.has("series") ? dataOrModel.path("series").path("models").path("echo") : dataOrModel;
    long s = 0;
    for (JsonNode v : m.path(field)) {
      s += v.asLong();
    }
    return s;
  }

  private static JsonNode find(JsonNode array, String field, String value) {
    for (JsonNode n : array) {
      if (n.path(field).asText().equals(value)) {
        return n;
      }
    }
    throw new AssertionError("no " + field + "=" + value + " in " + array);
  }

  @Test
  void aCrashedNodeShowsDown() throws Exception {
    // A node of its own (a runtime without serving parts), so the other tests' nodes stay up whatever the order.
    KilnRuntime rt = ManagedNode.join(cluster.startNode(new NodeOptions("dash-c", "127.0.0.1", Resources.cpu(1),
        Map.of())));
    await().atMost(WAIT).until(() -> alive(data(a), "dash-c") == Boolean.TRUE);
    cluster.crash("dash-c");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(250)).until(() -> alive(data(a), "dash-c") == Boolean.FALSE);
    JsonNode c = find(data(a).path("nodes"), "id", "dash-c");
    assertThat(c.path("downSinceMs").asLong()).isPositive();
    assertThat(rt.nodeId()).isEqualTo("dash-c");
  }

  private static Boolean alive(JsonNode d, String node) {
    for (JsonNode n : d.path("nodes")) {
      if (n.path("id").asText().equals(node)) {
        return n.path("alive").asBoolean();
      }
    }
    return null;
  }
}
