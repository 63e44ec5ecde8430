package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.PromText;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The dashboard's "Generative models" panel in a real browser: a {@code kiln start --head --foreground} process
 * serves the decoder of {@code models/llm} (built by its fetch.sh); streamed chat completions, every other one
 * sharing a long prompt, run through its OpenAI API while headless Chromium ({@link HeadlessChromium}) watches
 * {@code /dashboard}. The panel's row must appear for the model, show time to first token, inter-token latency, tokens
 * per second, KV-cache use and a prefix-cache hit rate, and, once the load stops, count exactly the first tokens and
 * generated tokens the node's own {@code /metrics} counted (the page's figures are the meters', not made up), with
 * no sequence left running. Screenshots go to {@code target/dashboard-screenshots/}.
 */
class LlmMetricsDashboardIT {

  static final Duration START = Duration.ofSeconds(180);
  static final String TOKEN = "llm-dash-" + UUID.randomUUID();
  static final String MODEL = "tiny-gpt";
  static final Path SHOTS = Path.of("target", "dashboard-screenshots");
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  static final String SHARED =
      "You are a helpful assistant for a pottery studio. Answer briefly and kindly. Question: ";

  @Test
  void theGenerativeModelsPanelShowsTheNodesOwnMeters() throws Exception {
    HeadlessChromium.requireInstalled(); // first: no browser, no pass
    Path models = Path.of("").toAbsolutePath().getParent().resolve("models/llm/tiny-gpt");
    assertThat(models.resolve("model.onnx")).as("run models/llm/fetch.sh (./run-tests does)").exists();
    CliProcesses cli = new CliProcesses(Path.of("target", "kiln-it",
        "llm-dashboard-" + UUID.randomUUID().toString().substring(0, 8)));
    try (HeadlessChromium browser = HeadlessChromium.launch(cli.home().resolve("chromium.out"))) {
      cli.startNode("head", "start", "--head", "--foreground", "--node-id", "head", "--host", "127.0.0.1",
          "--port", "0", "--grpc-port", "0", "--cluster-port", "0", "--cluster-name", "it-" + UUID.randomUUID(),
          "--cpus", "2", "--token", TOKEN, "--warmup-seconds", "0");
      int port = cli.awaitEntry("head", START).path("httpPort").asInt();
      String yaml = """
          deployments:
            - name: %s
              version: "1"
              model:
                uri: %s
                engine: Decoder
                threads: {intra_op: 1, inter_op: 1}
                options: {max_batched_tokens: 64, kv_cache_tokens: 1024, block_size: 16}
              pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
              batching: {max_batch_size: 4}
              queue: {max_queued: 64, timeout_ms: 120000}
          """.formatted(MODEL, models);
      HttpResponse<String> applied = call(port, "POST", "/api/v1/deployments", yaml);
      assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
      await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() ->
          call(port, "GET", "/v2/models/" + MODEL + "/ready", null).statusCode() == 200);

      HeadlessChromium.Page page = browser.open(1440, 1000);
      page.navigate("http://127.0.0.1:" + port + "/dashboard?token=" + TOKEN);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250)).until(() ->
          "READY".equals(page.eval("document.querySelector('[data-deployment=" + MODEL + "]')?.dataset.phase")));
      // Before any generation the decoder's row is there already (its gauges), with no latency to show.
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() ->
          Boolean.TRUE.equals(page.eval("document.getElementById('llm-panel').hidden === false"
              + " && document.querySelector('#llm tr[data-llm=\"" + MODEL + "\"]') !== null")));
      assertThat(page.eval(field("ttft"))).isEqualTo("– / –");

      // Streamed chats, one at a time (the page and the node share two cores), half of them sharing a prefix.
      AtomicLong tokens = new AtomicLong();
      for (int i = 0; i < 12; i++) {
        String content = (i % 2 == 0 ? SHARED : "") + "How hot is kiln number " + i + "?";
        String body = "{\"model\":\"" + MODEL + "\",\"stream\":true,\"max_tokens\":12,\"temperature\":0,"
            + "\"ignore_eos\":true,\"stream_options\":{\"include_usage\":true},"
            + "\"messages\":[{\"role\":\"user\",\"content\":" + JSON.writeValueAsString(content) + "}]}";
        HttpResponse<String> r = call(port, "POST", "/v1/chat/completions", body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.body()).contains("\"completion_tokens\":12").endsWith("data: [DONE]\n\n");
        tokens.addAndGet(12);
      }

      // The page's figures come to what the node's meters counted: every first token and generated token.
      PromText metrics = PromText.parse(call(port, "GET", "/metrics", null).body());
      double firsts = metrics.sum("kiln_llm_time_to_first_token_seconds_count", Map.of("model", MODEL));
      double generated = metrics.sum("kiln_llm_generation_tokens_total", Map.of("model", MODEL));
      assertThat(firsts).isEqualTo(12);
      assertThat(generated).isEqualTo(tokens.get());
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() ->
          number(page, row("requests")) == firsts);
      double seconds = number(page, row("seconds"));
      assertThat(number(page, row("tokensPerSecond")) * seconds).isCloseTo(generated,
          org.assertj.core.data.Offset.offset(0.1));
      assertThat(number(page, row("ttftP50Ms"))).isPositive();
      assertThat(number(page, row("ttftP99Ms"))).isGreaterThanOrEqualTo(number(page, row("ttftP50Ms")));
      assertThat(number(page, row("itlP50Ms"))).isPositive();
      assertThat(number(page, row("prefixHitRate"))).as("the shared prompt's blocks were found").isPositive()
          .isLessThan(1);
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() ->
          number(page, row("running")) == 0 && number(page, row("kvUsage")) == 0);
      // And the table shows them as text.
      assertThat(page.eval(field("ttft")).toString()).matches("[0-9.]+ ms / [0-9.k]+ ms");
      assertThat(page.eval(field("itl")).toString()).endsWith(" ms");
      assertThat(page.eval(field("prefix")).toString()).matches("[0-9.]+ %");
      assertThat(page.eval(field("kv")).toString()).isEqualTo("0.0 %");
      assertThat(page.eval(field("sequences")).toString()).isEqualTo("0 / 0");
      Files.createDirectories(SHOTS);
      page.screenshot(SHOTS.resolve("llm-panel.png"));
      System.out.println("LLM PANEL " + page.eval("JSON.stringify(window.kiln.llm)") + "; screenshot in "
          + SHOTS.toAbsolutePath());
    } finally {
      cli.close();
    }
  }

  private static String row(String figure) {
    return "window.kiln.llm['" + MODEL + "']?." + figure;
  }

  private static String field(String name) {
    return "document.querySelector('#llm tr[data-llm=\"" + MODEL + "\"] td[data-field=" + name + "]')?.textContent";
  }

  private static double number(HeadlessChromium.Page page, String expression) throws Exception {
    Object v = page.eval(expression);
    return v instanceof Number n ? n.doubleValue() : Double.NaN;
  }

  static HttpResponse<String> call(int port, String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + TOKEN)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }
}
