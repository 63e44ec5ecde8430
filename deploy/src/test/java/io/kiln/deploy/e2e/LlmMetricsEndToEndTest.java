package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The LLM meters of a node serving the decoder of {@code models/llm} (built by its fetch.sh): after streamed and
 * gathered chat completions and a Triton generate_stream, the gateway's {@code kiln_llm_*} histograms count one
 * first token and one end per request and one inter-token gap per token after the first, its token counters equal
 * the {@code usage} the answers reported, its requests count each answer's {@code finish_reason} (a client that
 * leaves mid-stream as {@code abort}); the server's end-to-end times fit inside the client's; the decoder's gauges
 * return to no running sequence and no KV use, and its prefix-cache counters give a hit rate for a repeated prompt;
 * Prometheus's {@code promtool} accepts every {@code kiln_llm_*} and {@code kiln_decoder_*} series.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class LlmMetricsEndToEndTest {

  static final String MODEL = "tiny-gpt-metered";
  static final String YAML = """
      deployments:
        - name: %s
          version: "1"
          model:
            uri: models/llm/tiny-gpt
            engine: Decoder
            threads: {intra_op: 1, inter_op: 1}
            options: {max_batched_tokens: 64, kv_cache_tokens: 2048, block_size: 16}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 4}
          queue: {max_queued: 64, timeout_ms: 120000}
      """.formatted(MODEL);
  static final int STREAMED = 3;
  static final int GATHERED = 2;

  private final Http http = new Http();
  private ServingCluster cluster;
  private int port;

  @BeforeAll
  void start() {
    Path models = ServingCluster.repositoryRoot().resolve("models/llm");
    assertThat(models.resolve("tiny-gpt/model.onnx")).as("run models/llm/fetch.sh (./run-tests does)").exists();
    cluster = ServingCluster.start("node-1");
    cluster.deploy(YAML);
    cluster.awaitReady(MODEL, 1);
    port = cluster.node("node-1").httpPort();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static JsonObject chat(String content, int maxTokens, boolean stream) {
    JsonObject body = new JsonObject().put("model", MODEL).put("max_tokens", maxTokens).put("temperature", 0)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", content)));
    if (stream) {
      body.put("stream", true).put("stream_options", new JsonObject().put("include_usage", true));
    }
    return body;
  }

  /** What one answer reported (its usage, its finish reason), and how long its client waited. */
  record Answer(long promptTokens, long completionTokens, String finishReason, double clientSeconds) {
  }

  private Answer send(JsonObject body) {
    long t0 = System.nanoTime();
    Http.Response r = http.postJson(port, "/v1/chat/completions", body.encode());
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    if (!body.getBoolean("stream", false)) {
      JsonObject usage = r.json().getJsonObject("usage");
      return new Answer(usage.getLong("prompt_tokens"), usage.getLong("completion_tokens"),
          r.json().getJsonArray("choices").getJsonObject(0).getString("finish_reason"), seconds);
    }
    List<StreamingEndToEndTest.Event> events = StreamingEndToEndTest.events(r.text());
    assertThat(events.get(events.size() - 1).data()).isEqualTo("[DONE]");
    String finish = null;
    JsonObject usage = null;
    for (StreamingEndToEndTest.Event e : events.subList(0, events.size() - 1)) {
      JsonObject json = e.json();
      JsonArray choices = json.getJsonArray("choices");
      if (!choices.isEmpty() && choices.getJsonObject(0).getString("finish_reason") != null) {
        finish = choices.getJsonObject(0).getString("finish_reason");
      }
      if (json.getValue("usage") instanceof JsonObject u) {
        usage = u;
      }
    }
    assertThat(usage).as("include_usage gives a usage chunk").isNotNull();
    return new Answer(usage.getLong("prompt_tokens"), usage.getLong("completion_tokens"), finish, seconds);
  }

  /** Triton's generate_stream: one event per chunk, each carrying the usage so far. */
  private Answer generateStream(String prompt, int maxTokens) {
    String body = new JsonObject().put("text_input", prompt).put("parameters", new JsonObject()
        .put("max_tokens", maxTokens).put("temperature", 0).put("ignore_eos", true)).encode();
    long t0 = System.nanoTime();
    Http.Response r = http.postJson(port, "/v2/models/" + MODEL + "/generate_stream", body);
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    List<StreamingEndToEndTest.Event> events = StreamingEndToEndTest.events(r.text());
    JsonObject last = events.get(events.size() - 1).json();
    assertThat(events).as("the decoder sends one chunk per token").hasSize(last.getInteger("completion_tokens"));
    return new Answer(last.getLong("prompt_tokens"), last.getLong("completion_tokens"), last.getString("finish_reason"),
        seconds);
  }

  private PromText metrics() {
    return PromText.scrape(ServingCluster.HOST, port);
  }

  /** The sum of {@code name}'s series of the model with {@code labels}; 0 before the first (PromText says -1). */
  private static double of(PromText m, String name, String... labels) {
    Map<String, String> wanted = new HashMap<>();
    wanted.put("model", MODEL);
    for (int i = 0; i + 1 < labels.length; i += 2) {
      wanted.put(labels[i], labels[i + 1]);
    }
    return Math.max(0, m.sum(name, wanted));
  }

  private static double decoder(PromText m, String name, String... labels) {
    Map<String, String> wanted = new HashMap<>();
    wanted.put("deployment", MODEL);
    for (int i = 0; i + 1 < labels.length; i += 2) {
      wanted.put(labels[i], labels[i + 1]);
    }
    return m.sum(name, wanted);
  }

  @Test
  void histogramsAndCountersAgreeWithTheAnswersAndTheDecoderGaugesSettle() throws Exception {
    PromText before = metrics();
    String repeated = "Tell me about kilns, the ovens that fire clay into pottery, and how hot they get inside";
    String[] prompts = {repeated, "Why is the sky blue?", "Count to ten", "Name a colour", repeated};
    List<Answer> answers = new java.util.ArrayList<>();
    for (int i = 0; i < STREAMED + GATHERED; i++) {
      answers.add(send(chat(prompts[i], 6 + 3 * i, i < STREAMED)));
    }
    answers.add(generateStream("Once upon a time", 7)); // Triton's generate extension is metered alike
    long prompt = answers.stream().mapToLong(Answer::promptTokens).sum();
    long completion = answers.stream().mapToLong(Answer::completionTokens).sum();
    long gaps = answers.stream().mapToLong(a -> a.completionTokens() - 1).sum();
    Map<String, Long> reasons = new HashMap<>();
    answers.forEach(a -> reasons.merge(a.finishReason(), 1L, Long::sum));
    assertThat(prompt).isPositive();
    assertThat(completion).isGreaterThanOrEqualTo(STREAMED + GATHERED);

    // The gateway records a request's end just before it answers: the last answer is in the counters at once.
    PromText after = metrics();
    int n = STREAMED + GATHERED + 1;
    assertThat(delta(before, after, "kiln_llm_time_to_first_token_seconds_count")).isEqualTo(n);
    assertThat(delta(before, after, "kiln_llm_e2e_request_latency_seconds_count")).isEqualTo(n);
    assertThat(delta(before, after, "kiln_llm_inter_token_latency_seconds_count")).isEqualTo(gaps);
    assertThat(delta(before, after, "kiln_llm_prompt_tokens_total")).isEqualTo(prompt);
    assertThat(delta(before, after, "kiln_llm_generation_tokens_total")).isEqualTo(completion);
    for (Map.Entry<String, Long> r : reasons.entrySet()) {
      assertThat(delta(before, after, "kiln_llm_requests_total", "finish_reason", r.getKey()))
          .as("finish_reason %s", r.getKey()).isEqualTo(r.getValue().doubleValue());
    }
    assertThat(delta(before, after, "kiln_llm_requests_total")).isEqualTo(n);
    // Measured, not made up: the server's times are inside what the client waited, first token before the end.
    double e2e = delta(before, after, "kiln_llm_e2e_request_latency_seconds_sum");
    double ttft = delta(before, after, "kiln_llm_time_to_first_token_seconds_sum");
    assertThat(ttft).isPositive().isLessThan(e2e);
    assertThat(e2e).isLessThanOrEqualTo(answers.stream().mapToDouble(Answer::clientSeconds).sum());
    assertThat(of(after, "kiln_llm_e2e_request_latency_seconds_bucket", "le", "+Inf"))
        .isEqualTo(of(after, "kiln_llm_e2e_request_latency_seconds_count"));

    // The decoder: nothing left running or waiting, no KV block in use; the repeated prompt found its prefix.
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      PromText m = metrics();
      return decoder(m, "kiln_decoder_sequences", "state", "running") == 0
          && decoder(m, "kiln_decoder_sequences", "state", "waiting") == 0
          && decoder(m, "kiln_decoder_kv_cache_usage_ratio") == 0;
    });
    PromText m = metrics();
    double lookups = decoder(m, "kiln_decoder_prefix_cache_lookup_tokens_total");
    double hits = decoder(m, "kiln_decoder_prefix_cache_hit_tokens_total");
    assertThat(lookups).isGreaterThanOrEqualTo(prompt);
    assertThat(hits).as("the repeated prompt's full blocks").isPositive().isLessThan(lookups);
    assertThat(m.has("kiln_decoder_preemptions_total")).isTrue();

    Path out = Files.createDirectories(Path.of("target", "monitoring"));
    Files.writeString(out.resolve("metrics-llm.txt"), m.text());
    Promtool.Result lint = Promtool.checkMetrics(m.text());
    assertThat(lint.problems()).as("promtool check metrics:%n%s", lint.output())
        .noneMatch(line -> line.startsWith("kiln_llm") || line.startsWith("kiln_decoder"));
    assertThat(m.text()).contains("kiln_llm_time_to_first_token_seconds_bucket",
        "kiln_llm_inter_token_latency_seconds_bucket", "kiln_decoder_prefix_cache_lookup_tokens_total");
    // Grafana's "Generative models" row and the KV-cache alert use only names this node exports.
    java.util.Set<String> referenced = new java.util.TreeSet<>(MonitoringFiles.referencedNames());
    referenced.removeIf(name -> !MonitoringFiles.generative(name));
    assertThat(referenced).contains("kiln_llm_time_to_first_token_seconds_bucket",
        "kiln_decoder_kv_cache_usage_ratio", "kiln_decoder_preemptions_total");
    assertThat(MonitoringFiles.sampleNames(m.text())).containsAll(referenced);
  }

  @Test
  void aClientThatLeavesMidStreamIsCountedAsAbort() throws Exception {
    PromText before = metrics();
    byte[] body = new JsonObject().put("model", MODEL).put("max_tokens", 400).put("temperature", 0)
        .put("ignore_eos", true).put("stream", true)
        .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "Go on")))
        .encode().getBytes(StandardCharsets.UTF_8);
    try (Socket s = new Socket(ServingCluster.HOST, port)) {
      OutputStream out = s.getOutputStream();
      out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      String seen = "";
      while (!seen.contains("data: ")) { // the first token is out: the request is running
        int k = in.read(buf);
        assertThat(k).as("the stream's first event").isPositive();
        seen += new String(buf, 0, k, StandardCharsets.UTF_8);
      }
    }
    await().atMost(Duration.ofSeconds(30)).until(() ->
        delta(before, metrics(), "kiln_llm_requests_total", "finish_reason", "abort") == 1);
    PromText after = metrics();
    assertThat(delta(before, after, "kiln_llm_e2e_request_latency_seconds_count")).isEqualTo(1);
    assertThat(delta(before, after, "kiln_llm_time_to_first_token_seconds_count")).isEqualTo(1);
    await().atMost(Duration.ofSeconds(30)).until(() ->
        decoder(metrics(), "kiln_decoder_sequences", "state", "running") == 0);
  }

  private static double delta(PromText before, PromText after, String name, String... labels) {
    return of(after, name, labels) - of(before, name, labels);
  }
}
