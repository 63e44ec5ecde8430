package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.FakeCluster.Sent;
import io.kiln.gateway.support.OpenAiTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.InferenceException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code stream: true}: Server-Sent Events byte for byte as OpenAI frames them, errors after the first event as an
 * error event, and the client's going away cancelling the stream's token.
 */
@Tag("slow")
class OpenAiStreamingTest extends OpenAiTestBase {

  private static final String CHAT = "{\"model\": \"llm\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}],"
      + " \"stream\": true";

  /** The {@code data: } events of a body, as written. */
  private static List<String> events(String body) {
    assertThat(body).endsWith("\n\n");
    return List.of(body.substring(0, body.length() - 2).split("\n\n"));
  }

  private static JsonObject first(String body) {
    return new JsonObject(events(body).get(0).substring("data: ".length()));
  }

  @Test
  void aChatStreamIsFramedAsOpenAiFramesItTheRoleOnTheFirstDeltaEmptyChunksSkipped() {
    HttpResponse<Buffer> r = openai("/v1/chat/completions", CHAT + "}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("text/event-stream; charset=utf-8");
    assertThat(r.getHeader("Cache-Control")).isEqualTo("no-cache");
    String body = r.bodyAsString();
    JsonObject first = first(body);
    String head = "data: {\"id\":\"" + first.getString("id") + "\",\"object\":\"chat.completion.chunk\",\"created\":"
        + first.getLong("created") + ",\"model\":\"llm\",\"choices\":[{\"index\":0,\"delta\":";
    assertThat(first.getString("id")).startsWith("chatcmpl-");
    assertThat(body).isEqualTo(
        head + "{\"role\":\"assistant\",\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        + head + "{\"content\":\",\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        + head + "{\"content\":\" world\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        + head + "{\"content\":\"!\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        + head + "{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n"
        + "data: [DONE]\n\n");
    assertThat(requests(TestModels.LLM, "ok", "200")).isPositive();
  }

  @Test
  void withIncludeUsageEveryChunkHasANullUsageAndALastChunkWithoutChoicesCarriesIt() {
    cluster.reply = List.of("Hi", "!");
    HttpResponse<Buffer> r = openai("/v1/chat/completions", CHAT + ", \"stream_options\": {\"include_usage\": true}}");
    String body = r.bodyAsString();
    JsonObject first = first(body);
    String head = "data: {\"id\":\"" + first.getString("id") + "\",\"object\":\"chat.completion.chunk\",\"created\":"
        + first.getLong("created") + ",\"model\":\"llm\",\"choices\":[";
    assertThat(body).isEqualTo(
        head + "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"logprobs\":null,"
            + "\"finish_reason\":null}],\"usage\":null}\n\n"
        + head + "{\"index\":0,\"delta\":{\"content\":\"!\"},\"logprobs\":null,\"finish_reason\":null}],"
            + "\"usage\":null}\n\n"
        + head + "{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n"
        + head + "],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}\n\n"
        + "data: [DONE]\n\n");
  }

  @Test
  void aCompletionStreamCarriesTextAndTheFinishReasonOnTheChunkThatHasIt() {
    HttpResponse<Buffer> r = openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\", \"stream\": true, "
        + "\"max_tokens\": 3}");
    String body = r.bodyAsString();
    JsonObject first = first(body);
    assertThat(first.getString("id")).startsWith("cmpl-");
    String head = "data: {\"id\":\"" + first.getString("id") + "\",\"object\":\"text_completion\",\"created\":"
        + first.getLong("created") + ",\"model\":\"llm\",\"choices\":[{\"index\":0,\"text\":";
    assertThat(body).isEqualTo(
        head + "\"Hello\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        + head + "\",\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n"
        + "data: [DONE]\n\n");
  }

  @Test
  void aStreamThatEndsWithoutAFinishReasonStillEndsItsChoice() {
    cluster.reply = List.of("a");
    cluster.finishes = false;
    HttpResponse<Buffer> r = openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\", \"stream\": true}");
    List<String> events = events(r.bodyAsString());
    assertThat(events).hasSize(3);
    assertThat(events.get(0)).contains("\"text\":\"a\",\"logprobs\":null,\"finish_reason\":null");
    assertThat(events.get(1)).contains("\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"stop\"");
    assertThat(events.get(2)).isEqualTo("data: [DONE]");
  }

  @Test
  void anErrorAfterTheFirstEventIsAnErrorEventAndTheStreamEndsWithoutDone() {
    cluster.node("node-a").streamFailure = InferenceException.unavailable("worker on node-a died");
    cluster.node("node-a").streamFailureAfter = 2;
    HttpResponse<Buffer> r = openai("/v1/chat/completions", CHAT + "}");
    assertThat(r.statusCode()).as("the status went out with the first event").isEqualTo(200);
    List<String> events = events(r.bodyAsString());
    assertThat(events).hasSize(2);
    assertThat(events.get(0)).contains("\"content\":\"Hello\"");
    assertThat(events.get(1)).isEqualTo("data: {\"error\":{\"message\":\"worker on node-a died\",\"type\":"
        + "\"server_error\",\"param\":null,\"code\":\"service_unavailable\"}}");
    assertThat(requests(TestModels.LLM, "unavailable", "200")).isPositive();
  }

  @Test
  void anErrorBeforeTheFirstEventIsAnErrorAnswerWithItsStatus() {
    cluster.node("node-a").streamFailure = InferenceException.unavailable("worker on node-a died");
    HttpResponse<Buffer> r = openai("/v1/chat/completions", CHAT + "}");
    assertThat(error(r, 503, null).getString("message")).isEqualTo("worker on node-a died");
    assertThat(r.getHeader("Retry-After")).isEqualTo("2");
  }

  @Test
  void aClientThatGoesAwayBeforeAnyChunkCancelsTheStreamsToken() {
    cluster.node("node-a").hold = true;
    HttpClient client = vertx.createHttpClient();
    try {
      HttpClientRequest req = join(client.request(new RequestOptions().setMethod(HttpMethod.POST)
          .setHost(HOST).setPort(gateway.httpPort()).setURI("/v1/chat/completions")));
      req.putHeader("Content-Type", "application/json").end(CHAT + "}");
      await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.sent.isEmpty());
      Sent open = cluster.last();
      assertThat(open.context().cancellation().isCancelled()).isFalse();
      join(req.connection().close());
      await().atMost(Duration.ofSeconds(20)).until(() -> open.context().cancellation().isCancelled());
      assertThat(open.context().cancellation().reason()).isEqualTo("client went away");
      await().atMost(Duration.ofSeconds(20)).until(() -> requests(TestModels.LLM, "cancelled", "499") > 0);
    } finally {
      join(client.close());
    }
  }

  @Test
  void aClientThatGoesAwayMidStreamCancelsTheStreamsToken() {
    cluster.node("node-a").holdStreamsAfter = 1;
    HttpClient client = vertx.createHttpClient();
    try {
      HttpClientRequest req = join(client.request(new RequestOptions().setMethod(HttpMethod.POST)
          .setHost(HOST).setPort(gateway.httpPort()).setURI("/v1/chat/completions")));
      AtomicReference<String> received = new AtomicReference<>("");
      CompletableFuture<HttpClientResponse> answered = new CompletableFuture<>();
      req.response().onSuccess(resp -> {
        resp.handler(b -> received.accumulateAndGet(b.toString(), String::concat));
        answered.complete(resp);
      });
      req.putHeader("Content-Type", "application/json").end(CHAT + "}");
      await().atMost(Duration.ofSeconds(20)).until(() -> received.get().contains("\"content\":\"Hello\""));
      assertThat(join(answered).statusCode()).isEqualTo(200);
      Sent open = cluster.last();
      assertThat(open.context().cancellation().isCancelled()).isFalse();
      join(req.connection().close());
      await().atMost(Duration.ofSeconds(20)).until(() -> open.context().cancellation().isCancelled());
      assertThat(received.get()).doesNotContain("[DONE]");
    } finally {
      join(client.close());
    }
  }

  @Test
  void aSlowReaderPausesTheStreamUntilItsWritesDrainAndLosesNothing() {
    int pieces = 400;
    String piece = "q".repeat(64 * 1024); // a letter no field name holds
    cluster.reply = java.util.Collections.nCopies(pieces, piece);
    HttpClient client = vertx.createHttpClient();
    try {
      HttpClientRequest req = join(client.request(new RequestOptions().setMethod(HttpMethod.POST)
          .setHost(HOST).setPort(gateway.httpPort()).setURI("/v1/completions")));
      java.util.concurrent.atomic.AtomicLong qs = new java.util.concurrent.atomic.AtomicLong();
      AtomicReference<String> tail = new AtomicReference<>("");
      CompletableFuture<HttpClientResponse> answered = new CompletableFuture<>();
      CompletableFuture<Void> ended = new CompletableFuture<>();
      req.response().onSuccess(resp -> {
        resp.pause(); // reads nothing until the gateway had to pause the model
        resp.handler(b -> {
          String text = b.toString();
          qs.addAndGet(text.chars().filter(c -> c == 'q').count());
          tail.set((tail.get() + text).substring(Math.max(0, tail.get().length() + text.length() - 64)));
        });
        resp.endHandler(v -> ended.complete(null));
        answered.complete(resp);
      });
      req.putHeader("Content-Type", "application/json")
          .end("{\"model\": \"llm\", \"prompt\": \"p\", \"stream\": true, \"max_tokens\": 1000}");
      HttpClientResponse resp = join(answered);
      await().atMost(Duration.ofSeconds(20)).until(() -> cluster.pauses.get() > 0);
      resp.resume();
      join(ended);
      assertThat(qs.get()).as("every piece arrived").isEqualTo((long) pieces * piece.length());
      assertThat(tail.get()).endsWith("\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    } finally {
      join(client.close());
    }
  }
}
