package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.support.OpenAiTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every refusal of the OpenAI API in OpenAI's shape, {@code {"error": {"message", "type", "param", "code"}}}: a
 * malformed or unsupported field names itself in {@code param}, and nothing reaches a pool.
 */
@Tag("slow")
class OpenAiErrorsTest extends OpenAiTestBase {

  private static final String CHAT = "\"model\": \"llm\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]";
  private static final String COMPLETION = "\"model\": \"llm\", \"prompt\": \"p\"";

  @ParameterizedTest(name = "{0}: {1}")
  @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
      "model | {\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}",
      "model | {\"model\": 7, \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}",
      "messages | {\"model\": \"llm\"}",
      "messages | {\"model\": \"llm\", \"messages\": []}",
      "messages | {\"model\": \"llm\", \"messages\": \"Hi\"}",
      "messages[0] | {\"model\": \"llm\", \"messages\": [\"Hi\"]}",
      "messages[0].role | {\"model\": \"llm\", \"messages\": [{\"role\": \"robot\", \"content\": \"Hi\"}]}",
      "messages[0].role | {\"model\": \"llm\", \"messages\": [{\"content\": \"Hi\"}]}",
      "messages[0].content | {\"model\": \"llm\", \"messages\": [{\"role\": \"user\"}]}",
      "messages[0].content | {\"model\": \"llm\", \"messages\": [{\"role\": \"user\", \"content\": 5}]}",
      "messages[0].content[0].text | {\"model\": \"llm\", \"messages\": [{\"role\": \"user\", "
          + "\"content\": [{\"type\": \"text\"}]}]}",
      "max_tokens | {CHAT, \"max_tokens\": 0}",
      "max_tokens | {CHAT, \"max_tokens\": \"ten\"}",
      "max_tokens | {CHAT, \"max_tokens\": 1.5}",
      "max_completion_tokens | {CHAT, \"max_completion_tokens\": -1}",
      "temperature | {CHAT, \"temperature\": 2.5}",
      "temperature | {CHAT, \"temperature\": \"hot\"}",
      "top_p | {CHAT, \"top_p\": 0}",
      "top_p | {CHAT, \"top_p\": 1.1}",
      "top_k | {CHAT, \"top_k\": -2}",
      "seed | {CHAT, \"seed\": 1e30}",
      "stop | {CHAT, \"stop\": 5}",
      "stop | {CHAT, \"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}",
      "stop[1] | {CHAT, \"stop\": [\"a\", 2]}",
      "stop | {CHAT, \"stop\": \"\"}",
      "stream | {CHAT, \"stream\": \"yes\"}",
      "stream_options | {CHAT, \"stream_options\": true}",
      "stream_options.include_usage | {CHAT, \"stream\": true, \"stream_options\": {\"include_usage\": 1}}",
      "user | {CHAT, \"user\": 5}",
      "ignore_eos | {CHAT, \"ignore_eos\": \"no\"}",
      "presence_penalty | {CHAT, \"presence_penalty\": 3}",
      "n | {CHAT, \"n\": \"one\"}",
      "prompt | {\"model\": \"llm\"}",
      "prompt | {\"model\": \"llm\", \"prompt\": 5}",
      "prompt | {\"model\": \"llm\", \"prompt\": []}",
  })
  void aMalformedFieldIs400NamingIt(String param, String body) {
    String json = body.replace("CHAT", CHAT);
    String path = json.contains("\"prompt\"") || param.equals("prompt") ? "/v1/completions" : "/v1/chat/completions";
    // Recorded once, under the model as soon as the body names a known one.
    String label = json.contains("\"model\": \"llm\"") ? TestModels.LLM : "_unknown";
    double before = requests(label, "invalid", "400");
    JsonObject error = error(openai(path, json), 400, param);
    assertThat(error.getString("type")).isEqualTo("invalid_request_error");
    assertThat(error.getString("message")).startsWith(param + ": ");
    assertThat(cluster.sent).as("nothing reaches a pool").isEmpty();
    assertThat(requests(label, "invalid", "400") - before).isEqualTo(1);
  }

  @ParameterizedTest(name = "{0}: {1}")
  @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
      "n | /v1/chat/completions | {CHAT, \"n\": 2}",
      "logprobs | /v1/chat/completions | {CHAT, \"logprobs\": true}",
      "top_logprobs | /v1/chat/completions | {CHAT, \"top_logprobs\": 3}",
      "presence_penalty | /v1/chat/completions | {CHAT, \"presence_penalty\": 0.5}",
      "frequency_penalty | /v1/chat/completions | {CHAT, \"frequency_penalty\": -1}",
      "logit_bias | /v1/chat/completions | {CHAT, \"logit_bias\": {\"50256\": -100}}",
      "tools | /v1/chat/completions | {CHAT, \"tools\": [{\"type\": \"function\"}]}",
      "tool_choice | /v1/chat/completions | {CHAT, \"tool_choice\": \"required\"}",
      "response_format | /v1/chat/completions | {CHAT, \"response_format\": {\"type\": \"json_object\"}}",
      "messages[0].content[0].type | /v1/chat/completions | {\"model\": \"llm\", \"messages\": [{\"role\": \"user\", "
          + "\"content\": [{\"type\": \"image_url\", \"image_url\": {\"url\": \"x\"}}]}]}",
      "n | /v1/completions | {COMPLETION, \"n\": 3}",
      "logprobs | /v1/completions | {COMPLETION, \"logprobs\": 0}",
      "echo | /v1/completions | {COMPLETION, \"echo\": true}",
      "best_of | /v1/completions | {COMPLETION, \"best_of\": 2}",
      "suffix | /v1/completions | {COMPLETION, \"suffix\": \"end\"}",
      "prompt | /v1/completions | {\"model\": \"llm\", \"prompt\": [\"a\", \"b\"]}",
      "prompt | /v1/completions | {\"model\": \"llm\", \"prompt\": [1, 2, 3]}",
  })
  void aFieldAskingForWhatKilnDoesNotDoIs400NamingItNeverIgnored(String param, String path, String body) {
    JsonObject error = error(openai(path, body.replace("CHAT", CHAT).replace("COMPLETION", COMPLETION)), 400, param);
    assertThat(error.getString("code")).isEqualTo("unsupported_parameter");
    assertThat(error.getString("message")).contains("not supported");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void aBodyThatIsNotAJsonObjectIs400WithoutAParam() {
    error(openai("/v1/chat/completions", "[1, 2]"), 400, null);
    error(openai("/v1/chat/completions", "{\"model\": "), 400, null);
    error(openai("/v1/embeddings", ""), 400, null);
  }

  @Test
  void anUnknownModelIs404ModelNotFound() {
    double before = requests("_unknown", "not_found", "404");
    for (String path : new String[] {"/v1/completions", "/v1/chat/completions", "/v1/embeddings"}) {
      JsonObject error = error(openai(path, "{\"model\": \"nope\", \"prompt\": \"p\", \"input\": \"p\", "
          + "\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}"), 404, "model");
      assertThat(error.getString("type")).isEqualTo("invalid_request_error");
      assertThat(error.getString("code")).isEqualTo("model_not_found");
    }
    assertThat(requests("_unknown", "not_found", "404") - before).isEqualTo(3);
  }

  @Test
  void aModelThatDoesNotKeepTheNeededContractIs400NamingModel() {
    error(openai("/v1/chat/completions", "{\"model\": \"mlp\", \"messages\": "
        + "[{\"role\": \"user\", \"content\": \"Hi\"}]}"), 400, "model");
    error(openai("/v1/completions", "{\"model\": \"encoder\", \"prompt\": \"p\"}"), 400, "model");
    error(openai("/v1/embeddings", "{\"model\": \"llm\", \"input\": \"p\"}"), 400, "model");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void aModelNotReadyIs503WithRetryAfter() {
    cluster.setNotReady(TestModels.LLM);
    HttpResponse<Buffer> r = openai("/v1/completions", "{" + COMPLETION + "}");
    JsonObject error = error(r, 503, null);
    assertThat(error.getString("type")).isEqualTo("server_error");
    assertThat(r.getHeader("Retry-After")).isEqualTo("2");
  }

  @Test
  void aFullPoolIs503WithItsRetryAfterInOpenAisShape() {
    for (String node : new String[] {"node-a", "node-b", "node-c"}) {
      cluster.node(node).failWith = new CapacityExceededException("pool queue is full", Duration.ofSeconds(7));
    }
    for (String[] call : new String[][] {{"/v1/chat/completions", "{" + CHAT + "}"},
        {"/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"p\"}"}}) {
      HttpResponse<Buffer> r = openai(call[0], call[1]);
      JsonObject error = error(r, 503, null);
      assertThat(error.getString("type")).isEqualTo("server_error");
      assertThat(error.getString("code")).isEqualTo("service_unavailable");
      assertThat(error.getString("message")).contains("pool queue is full");
      assertThat(r.getHeader("Retry-After")).as(call[0]).isEqualTo("7");
    }
  }

  @Test
  void theStreamLimitIs503WithRetryAfter() {
    gateway.streamOptions(new StreamOptions(1, 16, StreamOptions.DEFAULT_MAX_CHUNK_BYTES));
    HttpClient held = vertx.createHttpClient();
    try {
      cluster.node("node-a").hold = true;
      HttpClientRequest first = join(held.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(HOST)
          .setPort(gateway.httpPort()).setURI("/v1/chat/completions")));
      first.putHeader("Content-Type", "application/json").end("{" + CHAT + ", \"stream\": true}");
      await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.sent.isEmpty());
      HttpResponse<Buffer> r = openai("/v1/chat/completions", "{" + CHAT + "}");
      error(r, 503, null);
      assertThat(r.getHeader("Retry-After")).isEqualTo("2");
      join(first.connection().close()); // the held stream's place is given back
    } finally {
      join(held.close());
      gateway.streamOptions(StreamOptions.DEFAULTS);
    }
  }

  @Test
  void aDeadlinePassedIs504() {
    cluster.node("node-a").hold = true;
    JsonObject error = error(openai("/v1/embeddings", "{\"model\": \"encoder\", \"input\": \"p\"}",
        Map.of("kiln-timeout-ms", "200")), 504, null);
    assertThat(error.getString("code")).isEqualTo("timeout");
    cluster.node("node-a").hold = false;
    cluster.node("node-a").streamFailure = InferenceException.deadlineExceeded("deadline of 100 ms passed");
    error(openai("/v1/completions", "{" + COMPLETION + "}"), 504, null);
  }

  @Test
  void aBodyOverTheLimitIs413InOpenAisShape() {
    String big = "{\"model\": \"llm\", \"prompt\": \"" + "x".repeat(MAX_BODY) + "\"}";
    double before = requests("_unknown", "too_large", "413");
    JsonObject error = error(openai("/v1/completions", big), 413, null);
    assertThat(error.getString("type")).isEqualTo("invalid_request_error");
    assertThat(error.getString("code")).isEqualTo("request_too_large");
    assertThat(requests("_unknown", "too_large", "413") - before).isEqualTo(1);
  }

  @Test
  void anUnknownV1PathIs404InOpenAisShape() {
    HttpResponse<Buffer> r = join(http.get(gateway.httpPort(), HOST, "/v1/engines").send());
    JsonObject error = error(r, 404, null);
    assertThat(error.getString("message")).isEqualTo("Invalid URL (GET /v1/engines)");
    assertThat(error.getValue("code")).isNull();
  }
}
