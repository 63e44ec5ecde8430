package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Generative serving through an assembled node, with the models of {@code models/llm} (built by its fetch.sh):
 * the decoder's greedy text over the OpenAI API equals torch's (reference.json) token for token, streamed or not,
 * alone or among concurrent streams; Triton's generate extension serves the same model; a client that goes away
 * frees its sequence's KV cache; the encoder's embeddings; and the official {@code openai} npm client as a user's
 * application drives all of it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class LlmEndToEndTest {

  static final String YAML = """
      deployments:
        - name: tiny-gpt
          version: "1"
          model:
            uri: models/llm/tiny-gpt
            engine: Decoder
            threads: {intra_op: 1, inter_op: 1}
            options: {max_batched_tokens: 64, kv_cache_tokens: 4096, block_size: 16}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 8}
          queue: {max_queued: 64, timeout_ms: 120000}
        - name: tiny-gpt-pair
          version: "1"
          model:
            uri: models/llm/tiny-gpt
            engine: Decoder
            threads: {intra_op: 1, inter_op: 1}
          pool: {workers_per_node: 2, worker_resources: {CPU: 0.25}}
          batching: {max_batch_size: 4}
        - name: all-minilm-l6-v2
          version: "1"
          model:
            uri: models/llm/all-minilm-l6-v2
            engine: Encoder
            threads: {intra_op: 1, inter_op: 1}
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 16, max_batch_delay_ms: 2}
      """;

  private final Http http = new Http();
  private ServingCluster cluster;
  private int port;
  private JsonArray reference;

  @BeforeAll
  void start() throws IOException {
    Path models = ServingCluster.repositoryRoot().resolve("models/llm");
    assertThat(models.resolve("tiny-gpt/model.onnx")).as("run models/llm/fetch.sh (./run-tests does)").exists();
    reference = new JsonObject(Files.readString(models.resolve("tiny-gpt/reference.json"))).getJsonArray("prompts");
    cluster = ServingCluster.start("node-1");
    cluster.deploy(YAML);
    cluster.awaitReady("tiny-gpt", 1);
    cluster.awaitReady("all-minilm-l6-v2", 1);
    cluster.awaitReady("tiny-gpt-pair", 1);
    port = cluster.node("node-1").httpPort();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String completion(String prompt, int maxTokens, boolean stream) {
    return new JsonObject().put("model", "tiny-gpt").put("prompt", prompt).put("max_tokens", maxTokens)
        .put("temperature", 0).put("stream", stream).encode();
  }

  /** The text of an OpenAI SSE answer, and that it ended with [DONE]. */
  private static String streamedText(String sse) {
    List<StreamingEndToEndTest.Event> events = StreamingEndToEndTest.events(sse);
    assertThat(events).isNotEmpty();
    assertThat(events.get(events.size() - 1).data()).isEqualTo("[DONE]");
    StringBuilder text = new StringBuilder();
    for (StreamingEndToEndTest.Event e : events.subList(0, events.size() - 1)) {
      JsonArray choices = e.json().getJsonArray("choices");
      if (!choices.isEmpty()) {
        text.append(choices.getJsonObject(0).getString("text", ""));
      }
    }
    return text.toString();
  }

  @Test
  void greedyCompletionsAreTorchsTokensStreamedOrNot() {
    for (int i = 0; i < reference.size(); i++) {
      JsonObject ref = reference.getJsonObject(i);
      int n = ref.getJsonArray("greedy_ids").size();
      Http.Response one = http.postJson(port, "/v1/completions", completion(ref.getString("text"), n, false));
      assertThat(one.status()).as(one.text()).isEqualTo(200);
      JsonObject choice = one.json().getJsonArray("choices").getJsonObject(0);
      assertThat(choice.getString("text")).as("prompt %d", i).isEqualTo(ref.getString("greedy_text"));
      assertThat(choice.getString("finish_reason")).isEqualTo("length");
      JsonObject usage = one.json().getJsonObject("usage");
      assertThat(usage.getInteger("prompt_tokens")).isEqualTo(ref.getJsonArray("input_ids").size());
      assertThat(usage.getInteger("completion_tokens")).isEqualTo(n);

      Http.Response sse = http.postJson(port, "/v1/completions", completion(ref.getString("text"), n, true));
      assertThat(sse.status()).as(sse.text()).isEqualTo(200);
      assertThat(sse.header("Content-Type")).startsWith("text/event-stream");
      assertThat(streamedText(sse.text())).isEqualTo(ref.getString("greedy_text"));
    }
  }

  @Test
  void concurrentStreamsBatchedTogetherKeepEachPromptsTokens() {
    List<CompletableFuture<Http.Response>> calls = new ArrayList<>();
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < reference.size(); i++) {
        JsonObject ref = reference.getJsonObject(i);
        String body = completion(ref.getString("text"), ref.getJsonArray("greedy_ids").size(), true);
        calls.add(CompletableFuture.supplyAsync(() -> http.postJson(port, "/v1/completions", body)));
      }
    }
    for (int k = 0; k < calls.size(); k++) {
      Http.Response r = calls.get(k).join();
      assertThat(r.status()).as(r.text()).isEqualTo(200);
      assertThat(streamedText(r.text())).isEqualTo(reference.getJsonObject(k % reference.size()).getString("greedy_text"));
    }
  }

  @Test
  void tritonsGenerateExtensionServesTheSameModel() {
    JsonObject ref = reference.getJsonObject(0);
    String body = new JsonObject().put("text_input", ref.getString("text")).put("parameters", new JsonObject()
        .put("max_tokens", 16).put("temperature", 0)).encode();
    Http.Response sse = http.postJson(port, "/v2/models/tiny-gpt/generate_stream", body);
    assertThat(sse.status()).as(sse.text()).isEqualTo(200);
    StringBuilder text = new StringBuilder();
    String finish = "";
    for (StreamingEndToEndTest.Event e : StreamingEndToEndTest.events(sse.text())) {
      text.append(e.json().getString("text_output"));
      finish = e.json().getString("finish_reason");
    }
    assertThat(text.toString()).isEqualTo(ref.getString("greedy_text"));
    assertThat(finish).isEqualTo("length");
  }

  @Test
  void aClientThatGoesAwayFreesItsSequenceAndItsKvCache() throws Exception {
    String body = new JsonObject().put("model", "tiny-gpt").put("prompt", "Once upon a time").put("max_tokens", 400)
        .put("temperature", 0).put("stream", true).put("ignore_eos", true).encode();
    try (Socket socket = new Socket(ServingCluster.HOST, port)) {
      OutputStream out = socket.getOutputStream();
      out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
      out.flush();
      InputStream in = socket.getInputStream();
      byte[] buf = new byte[4096];
      int read = in.read(buf); // the headers and the first events: the sequence is running
      assertThat(read).isPositive();
      await().atMost(Duration.ofSeconds(30)).until(() -> metric("kiln_decoder_sequences", "state", "running") >= 1);
    }
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      assertThat(metric("kiln_decoder_sequences", "state", "running")).isZero();
      assertThat(metric("kiln_decoder_kv_blocks", "state", "used")).isZero();
    });
  }

  @Test
  void promptsSharingASystemPromptGoToTheWorkerThatCachedIt() {
    String system = "You are the support assistant of a model-serving platform. Answer in one short sentence, "
        + "name the page of the documentation you used, and never invent a page that does not exist.";
    for (String question : List.of("How do I deploy?", "How do I scale?", "What is a pool?", "Where are logs?",
        "How do I stop it?")) {
      String body = new JsonObject().put("model", "tiny-gpt-pair").put("max_tokens", 2).put("temperature", 0)
          .put("messages", new JsonArray().add(new JsonObject().put("role", "system").put("content", system))
              .add(new JsonObject().put("role", "user").put("content", question))).encode();
      Http.Response r = http.postJson(port, "/v1/chat/completions", body);
      assertThat(r.status()).as(r.text()).isEqualTo(200);
    }
    PromText metrics = PromText.scrape(port);
    double worker0 = metrics.sum("kiln_decoder_prefix_cache_hit_tokens_total",
        java.util.Map.of("deployment", "tiny-gpt-pair", "worker", "0"));
    double worker1 = metrics.sum("kiln_decoder_prefix_cache_hit_tokens_total",
        java.util.Map.of("deployment", "tiny-gpt-pair", "worker", "1"));
    assertThat(worker0 + worker1).as("4 later requests reuse the system prompt's blocks").isGreaterThanOrEqualTo(4 * 32);
    assertThat(Math.min(worker0, worker1)).as("all on the worker that holds them").isZero();
  }

  private double metric(String name, String label, String value) {
    return PromText.scrape(port).sum(name, java.util.Map.of(label, value));
  }

  @Test
  void embeddingsAreNormalisedAndCloserForSimilarSentences() {
    Http.Response r = http.postJson(port, "/v1/embeddings", new JsonObject().put("model", "all-minilm-l6-v2")
        .put("input", new JsonArray(List.of("A man is eating food.", "A man is eating a piece of bread.",
            "The girl is carrying a baby."))).encode());
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    JsonArray data = r.json().getJsonArray("data");
    float[][] v = new float[3][];
    for (int i = 0; i < 3; i++) {
      JsonArray e = data.getJsonObject(i).getJsonArray("embedding");
      v[i] = new float[e.size()];
      for (int j = 0; j < e.size(); j++) {
        v[i][j] = e.getNumber(j).floatValue();
      }
    }
    assertThat(v[0]).hasSize(384);
    assertThat(dot(v[0], v[0])).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-4));
    assertThat(dot(v[0], v[1])).isGreaterThan(dot(v[0], v[2]) + 0.2);
    assertThat(r.json().getJsonObject("usage").getInteger("prompt_tokens")).isPositive();
  }

  private static double dot(float[] a, float[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) {
      s += a[i] * b[i];
    }
    return s;
  }

  @Test
  void theOfficialOpenAiClientDrivesChatStreamingCompletionsAndEmbeddings() throws Exception {
    Path node = ServingCluster.repositoryRoot().resolve("deploy/src/test/node");
    assertThat(node.resolve("node_modules/openai")).as("run deploy/src/test/node/fetch.sh (./run-tests does)")
        .exists();
    Process p = new ProcessBuilder("node", "openai-client.mjs", "http://" + ServingCluster.HOST + ":" + port + "/v1",
        "tiny-gpt", "all-minilm-l6-v2").directory(node.toFile()).redirectErrorStream(true).start();
    String output;
    try (InputStream in = p.getInputStream()) {
      output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(output).isZero();
    JsonObject seen = new JsonObject(output.lines().reduce((a, b) -> b).orElseThrow());
    assertThat(seen.getJsonArray("models").getList()).containsExactly("all-minilm-l6-v2", "tiny-gpt", "tiny-gpt-pair");
    JsonObject chat = seen.getJsonObject("chat");
    JsonObject stream = seen.getJsonObject("stream");
    assertThat(chat.getString("role")).isEqualTo("assistant");
    assertThat(chat.getString("object")).isEqualTo("chat.completion");
    assertThat(stream.getString("text")).as("greedy: streamed text is the whole answer's").isEqualTo(
        chat.getString("text"));
    assertThat(stream.getString("role")).isEqualTo("assistant");
    assertThat(stream.getString("finish")).isEqualTo(chat.getString("finish"));
    assertThat(stream.getJsonObject("usage").getInteger("completion_tokens"))
        .isEqualTo(chat.getJsonObject("usage").getInteger("completion_tokens")).isBetween(1, 12);
    assertThat(seen.getJsonObject("completion").getJsonObject("usage").getInteger("prompt_tokens")).isEqualTo(4);
    JsonObject emb = seen.getJsonObject("embeddings");
    assertThat(emb.getInteger("dimension")).isEqualTo(384);
    assertThat(emb.getDouble("similar")).isGreaterThan(emb.getDouble("unrelated"));
    assertThat(seen.getJsonObject("unknownModel").getInteger("status")).isEqualTo(404);
    assertThat(seen.getJsonObject("badTemperature").getInteger("status")).isEqualTo(400);
    assertThat(seen.getJsonObject("badTemperature").getString("param")).isEqualTo("temperature");
  }
}
