package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelStreamInferResponse;
import io.kiln.testkit.PromText;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Requests to a decoder through an assembled node (issue #35): bad inputs over the OpenAI API are 400 naming the
 * field, stop sequences end the text before the stop string, a cancelled gRPC {@code ModelStreamInfer} call frees its
 * sequence and KV blocks, and seeded sampled chat streams give the same text concurrently as alone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class LlmRequestsEndToEndTest {

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
          batching: {max_batch_size: 16}
          queue: {max_queued: 64, timeout_ms: 120000}
      """;
  /** tiny-gpt's n_positions (the KV cache, 4096 tokens, is larger). */
  static final int CONTEXT = 512;

  private final Http http = new Http();
  private ServingCluster cluster;
  private int port;
  private JsonObject reference;

  @BeforeAll
  void start() throws IOException {
    Path models = ServingCluster.repositoryRoot().resolve("models/llm");
    assertThat(models.resolve("tiny-gpt/model.onnx")).as("run models/llm/fetch.sh (./run-tests does)").exists();
    reference = new JsonObject(Files.readString(models.resolve("tiny-gpt/reference.json"))).getJsonArray("prompts")
        .getJsonObject(0);
    cluster = ServingCluster.start("node-1");
    cluster.deploy(YAML);
    cluster.awaitReady("tiny-gpt", 1);
    port = cluster.node("node-1").httpPort();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static JsonObject chat(JsonArray messages) {
    return new JsonObject().put("model", "tiny-gpt").put("messages", messages).put("max_tokens", 8)
        .put("temperature", 0);
  }

  private static JsonArray user(String content) {
    return new JsonArray().add(new JsonObject().put("role", "user").put("content", content));
  }

  private static JsonObject completion(String prompt, int maxTokens) {
    return new JsonObject().put("model", "tiny-gpt").put("prompt", prompt).put("max_tokens", maxTokens)
        .put("temperature", 0);
  }

  /** A 400 whose OpenAI error names {@code param}; the error object. */
  private JsonObject assertInvalid(String path, JsonObject body, String param) {
    Http.Response r = http.postJson(port, path, body.encode());
    assertThat(r.status()).as(r.text()).isEqualTo(400);
    JsonObject error = r.json().getJsonObject("error");
    assertThat(error.getString("type")).as(r.text()).isEqualTo("invalid_request_error");
    assertThat(error.getString("param")).as(r.text()).isEqualTo(param);
    return error;
  }

  @Test
  void emptyMessagesAreRefusedNamingMessages() {
    assertInvalid("/v1/chat/completions", chat(new JsonArray()), "messages");
  }

  @Test
  void anUnknownRoleIsRefusedNamingIt() {
    JsonArray messages = new JsonArray().add(new JsonObject().put("role", "wizard").put("content", "hi"));
    assertInvalid("/v1/chat/completions", chat(messages), "messages[0].role");
    JsonArray second = user("hi").add(new JsonObject().put("role", "robot").put("content", "x"));
    assertInvalid("/v1/chat/completions", chat(second), "messages[1].role");
  }

  @Test
  void aPromptLongerThanTheContextIsA400NotA500() {
    String tooLong = " tick".repeat(CONTEXT + 50);
    Http.Response r = http.postJson(port, "/v1/completions", completion(tooLong, 4).encode());
    assertThat(r.status()).as(r.text()).isEqualTo(400);
    JsonObject error = r.json().getJsonObject("error");
    assertThat(error.getString("type")).isEqualTo("invalid_request_error");
    assertThat(error.getString("message")).as(r.text()).contains("text_input").contains("tokens").contains("context");
    Http.Response c = http.postJson(port, "/v1/chat/completions", chat(user(tooLong)).encode());
    assertThat(c.status()).as(c.text()).isEqualTo(400);
    assertThat(c.json().getJsonObject("error").getString("message")).as(c.text()).contains("text_input");
    Http.Response s = http.postJson(port, "/v1/completions", completion(tooLong, 4).put("stream", true).encode());
    assertThat(s.status()).as(s.text()).isEqualTo(400);
  }

  @Test
  void aPromptLongerThanTheContextNamesThePromptField() {
    String tooLong = " tick".repeat(CONTEXT + 50);
    assertInvalid("/v1/completions", completion(tooLong, 4), "prompt");
    assertInvalid("/v1/chat/completions", chat(user(tooLong)), "messages");
  }

  @Test
  void maxTokensOverTheContextIsRefusedNamingIt() {
    assertInvalid("/v1/completions", completion("Hello, my name is", CONTEXT + 100), "max_tokens");
    assertInvalid("/v1/chat/completions", chat(user("hi")).put("max_tokens", CONTEXT * 2), "max_tokens");
  }

  @Test
  void aStopSequenceEndsTheTextBeforeIt() {
    String greedy = reference.getString("greedy_text"); // "update SunderyetELY ~hower crawsight Nib ..."
    String stop = "crawsight";
    String expected = greedy.substring(0, greedy.indexOf(stop));
    assertThat(expected).isNotEmpty();
    JsonObject body = completion(reference.getString("text"), 16).put("stop", stop);
    Http.Response r = http.postJson(port, "/v1/completions", body.encode());
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    JsonObject choice = r.json().getJsonArray("choices").getJsonObject(0);
    assertThat(choice.getString("text")).isEqualTo(expected);
    assertThat(choice.getString("finish_reason")).isEqualTo("stop");

    Http.Response sse = http.postJson(port, "/v1/completions", body.copy().put("stream", true)
        .put("stop", new JsonArray().add("zzzz").add(stop)).encode());
    assertThat(sse.status()).as(sse.text()).isEqualTo(200);
    StringBuilder text = new StringBuilder();
    String finish = null;
    List<StreamingEndToEndTest.Event> events = StreamingEndToEndTest.events(sse.text());
    assertThat(events.get(events.size() - 1).data()).isEqualTo("[DONE]");
    for (StreamingEndToEndTest.Event e : events.subList(0, events.size() - 1)) {
      JsonArray choices = e.json().getJsonArray("choices");
      if (!choices.isEmpty()) {
        text.append(choices.getJsonObject(0).getString("text", ""));
        if (choices.getJsonObject(0).getString("finish_reason") != null) {
          finish = choices.getJsonObject(0).getString("finish_reason");
        }
      }
    }
    assertThat(text.toString()).isEqualTo(expected);
    assertThat(finish).isEqualTo("stop");
  }

  private double metric(String name, String state) {
    return PromText.scrape(port).sum(name, Map.of("deployment", "tiny-gpt", "state", state));
  }

  @Test
  void aCancelledModelStreamInferCallFreesItsSequenceAndKvBlocks() {
    Vertx vertx = Vertx.vertx();
    GrpcClient client = GrpcClient.client(vertx);
    try {
      List<ModelStreamInferResponse> got = new CopyOnWriteArrayList<>();
      AtomicReference<GrpcClientRequest<ModelInferRequest, ModelStreamInferResponse>> call = new AtomicReference<>();
      SocketAddress at = SocketAddress.inetSocketAddress(cluster.node("node-1").grpcPort(), ServingCluster.HOST);
      ModelInferRequest request = ModelInferRequest.newBuilder().setModelName("tiny-gpt").setId("long")
          .putParameters("max_tokens", InferParameter.newBuilder().setInt64Param(400).build())
          .putParameters("ignore_eos", InferParameter.newBuilder().setBoolParam(true).build())
          .putParameters("temperature", InferParameter.newBuilder().setInt64Param(0).build())
          .addInputs(InferInputTensor.newBuilder().setName("text_input").setDatatype("BYTES").addShape(1)
              .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8(
                  "Once upon a time"))))
          .build();
      client.request(at, GRPCInferenceServiceGrpcClient.ModelStreamInfer).onSuccess(req -> {
        call.set(req);
        req.response().onSuccess(resp -> resp.handler(got::add));
        req.write(request);
      });
      await().atMost(ServingCluster.WAIT).until(() -> !got.isEmpty());
      assertThat(got.get(0).getErrorMessage()).isEmpty();
      assertThat(got.get(0).getInferResponse().getOutputsList()).anyMatch(o -> o.getName().equals("text_output"));
      await().atMost(ServingCluster.WAIT).until(() -> metric("kiln_decoder_sequences", "running") >= 1);

      vertx.runOnContext(v -> call.get().cancel());

      await().atMost(ServingCluster.WAIT).untilAsserted(() -> {
        assertThat(metric("kiln_decoder_sequences", "running")).isZero();
        assertThat(metric("kiln_decoder_sequences", "waiting")).isZero();
        assertThat(metric("kiln_decoder_kv_blocks", "used")).isZero();
      });
      assertThat(got.size()).as("chunks received of 400").isLessThan(400);
    } finally {
      ServingCluster.join(client.close().toCompletionStage());
      ServingCluster.join(vertx.close().toCompletionStage());
    }
  }

  private static String sampledChat(int i) {
    JsonArray messages = new JsonArray().add(new JsonObject().put("role", "system").put("content", "Be brief."))
        .add(new JsonObject().put("role", "user").put("content", "Tell me story number " + i + " about a kiln."));
    return new JsonObject().put("model", "tiny-gpt").put("messages", messages).put("max_tokens", 12 + i)
        .put("temperature", 0.8).put("seed", 7000 + i).put("stream", true).encode();
  }

  /** The content and finish reason of a streamed chat completion. */
  private static List<String> chatStream(Http.Response r) {
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    List<StreamingEndToEndTest.Event> events = StreamingEndToEndTest.events(r.text());
    assertThat(events.get(events.size() - 1).data()).isEqualTo("[DONE]");
    StringBuilder text = new StringBuilder();
    String finish = null;
    for (StreamingEndToEndTest.Event e : events.subList(0, events.size() - 1)) {
      JsonArray choices = e.json().getJsonArray("choices");
      if (!choices.isEmpty()) {
        JsonObject c = choices.getJsonObject(0);
        text.append(c.getJsonObject("delta").getString("content", ""));
        if (c.getString("finish_reason") != null) {
          finish = c.getString("finish_reason");
        }
      }
    }
    return List.of(text.toString(), String.valueOf(finish));
  }

  @Test
  void concurrentSeededChatStreamsEqualTheSameRequestSentAlone() {
    int n = 16;
    List<List<String>> alone = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      alone.add(chatStream(http.postJson(port, "/v1/chat/completions", sampledChat(i))));
    }
    // A thread per request (the common pool has one thread on two cores): the 16 streams run at once.
    ExecutorService threads = Executors.newFixedThreadPool(n);
    try {
      List<CompletableFuture<Http.Response>> calls = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        String body = sampledChat(i);
        calls.add(CompletableFuture.supplyAsync(() -> http.postJson(port, "/v1/chat/completions", body), threads));
      }
      for (int i = 0; i < n; i++) {
        assertThat(chatStream(calls.get(i).join())).as("request %d", i).isEqualTo(alone.get(i));
      }
    } finally {
      threads.shutdownNow();
    }
    assertThat(alone.stream().map(a -> a.get(0)).distinct().count()).as("distinct texts").isGreaterThan(n / 2);
  }
}
