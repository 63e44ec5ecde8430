package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.OpenAiTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.TextModels;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * {@code /v1/completions} and {@code /v1/chat/completions} without streaming: the chunks gathered into OpenAI's
 * answer, and each request field reaching the pool as the {@link TextModels} contract's parameter.
 */
class OpenAiCompletionsTest extends OpenAiTestBase {

  private static String textInput(InferenceRequest r) {
    return new String(r.inputs().get(0).byteElements().get(0), StandardCharsets.UTF_8);
  }

  @Test
  void aCompletionGathersTheTextWithItsFinishReasonAndUsage() {
    double before = requests(TestModels.LLM, "ok", "200");
    HttpResponse<Buffer> r = openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"Say hello to the world\"}");
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.fieldNames()).containsExactly("id", "object", "created", "model", "choices", "usage");
    assertThat(body.getString("id")).startsWith("cmpl-");
    assertThat(body.getString("object")).isEqualTo("text_completion");
    assertThat(body.getLong("created")).isCloseTo(System.currentTimeMillis() / 1000, Offset.offset(60L));
    assertThat(body.getString("model")).isEqualTo(TestModels.LLM);
    assertThat(body.getJsonArray("choices").encode())
        .isEqualTo("[{\"index\":0,\"text\":\"Hello, world!\",\"logprobs\":null,\"finish_reason\":\"stop\"}]");
    assertThat(body.getJsonObject("usage").encode())
        .isEqualTo("{\"prompt_tokens\":5,\"completion_tokens\":5,\"total_tokens\":10}");
    InferenceRequest sent = cluster.last().request();
    assertThat(textInput(sent)).isEqualTo("Say hello to the world");
    assertThat(sent.parameters()).as("the legacy endpoint's default, as OpenAI's")
        .isEqualTo(Map.of(TextModels.MAX_TOKENS, 16L));
    assertThat(sent.id()).isEqualTo(body.getString("id"));
    assertThat(requests(TestModels.LLM, "ok", "200") - before).as("recorded once").isEqualTo(1);
  }

  @Test
  void aPromptMayBeAnArrayOfOneString() {
    HttpResponse<Buffer> r = openai("/v1/completions",
        "{\"model\": \"llm\", \"prompt\": [\"one\"], \"max_tokens\": 2}");
    assertThat(r.statusCode()).isEqualTo(200);
    JsonObject choice = r.bodyAsJsonObject().getJsonArray("choices").getJsonObject(0);
    assertThat(choice.getString("text")).as("two tokens: Hello and the empty one").isEqualTo("Hello");
    assertThat(choice.getString("finish_reason")).isEqualTo("length");
    assertThat(textInput(cluster.last().request())).isEqualTo("one");
  }

  @Test
  void aChatCompletionSendsTheMessagesAsTheContractsChatInputAndAnswersTheAssistantsMessage() {
    HttpResponse<Buffer> r = openai("/v1/chat/completions", """
        {"model": "llm", "messages": [
           {"role": "system", "content": "Be brief."},
           {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}],
            "name": "ann"},
           {"role": "assistant", "content": null},
           {"role": "developer", "content": "x"}, {"role": "tool", "content": "y", "tool_call_id": "t1"}],
         "max_completion_tokens": 3, "user": "u-1", "frequency_penalty": 0, "presence_penalty": 0.0,
         "logit_bias": {}, "logprobs": false, "n": 1, "stream": false, "unknown_field": {"ignored": true}}""");
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    JsonObject body = r.bodyAsJsonObject();
    assertThat(body.getString("id")).startsWith("chatcmpl-");
    assertThat(body.getString("object")).isEqualTo("chat.completion");
    assertThat(body.getJsonArray("choices").encode()).isEqualTo("[{\"index\":0,\"message\":{\"role\":\"assistant\","
        + "\"content\":\"Hello,\"},\"logprobs\":null,\"finish_reason\":\"length\"}]");
    assertThat(body.getJsonObject("usage").getLong("completion_tokens")).isEqualTo(3);
    InferenceRequest sent = cluster.last().request();
    assertThat(textInput(sent)).isEqualTo("[{\"role\":\"system\",\"content\":\"Be brief.\"},"
        + "{\"role\":\"user\",\"content\":\"Hi\\nthere\"},{\"role\":\"assistant\",\"content\":\"\"},"
        + "{\"role\":\"developer\",\"content\":\"x\"},{\"role\":\"tool\",\"content\":\"y\"}]");
    assertThat(sent.parameters()).isEqualTo(Map.of(TextModels.MAX_TOKENS, 3L, TextModels.INPUT_FORMAT,
        TextModels.FORMAT_CHAT));
  }

  @Test
  void everySamplingFieldReachesThePoolAsTheContractsParameter() {
    HttpResponse<Buffer> r = openai("/v1/chat/completions", """
        {"model": "llm", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 7, "temperature": 0,
         "top_p": 0.9, "top_k": 40, "seed": -42, "stop": ["END", "[x]"], "ignore_eos": true}""");
    assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
    assertThat(cluster.last().request().parameters()).isEqualTo(Map.of(TextModels.MAX_TOKENS, 7L,
        TextModels.TEMPERATURE, 0.0, TextModels.TOP_P, 0.9, TextModels.TOP_K, 40L, TextModels.SEED, -42L,
        TextModels.STOP, "[\"END\",\"[x]\"]", TextModels.IGNORE_EOS, true, TextModels.INPUT_FORMAT, "chat"));
  }

  @Test
  void oneStopStringIsSentAsAnArrayOfOneAndTopKMinusOneMeansAll() {
    openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\", \"stop\": \"\\n\", \"top_k\": -1, "
        + "\"max_tokens\": 100, \"temperature\": 1.5}");
    assertThat(cluster.last().request().parameters()).isEqualTo(Map.of(TextModels.MAX_TOKENS, 100L,
        TextModels.STOP, "[\"\\n\"]", TextModels.TOP_K, 0L, TextModels.TEMPERATURE, 1.5));
  }

  @Test
  void maxCompletionTokensWinsOverMaxTokens() {
    openai("/v1/chat/completions", "{\"model\": \"llm\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}],"
        + " \"max_tokens\": 9, \"max_completion_tokens\": 4}");
    assertThat(cluster.last().request().parameters()).containsEntry(TextModels.MAX_TOKENS, 4L);
  }

  @Test
  void aModelEndingWithoutAFinishReasonReadsStop() {
    cluster.reply = List.of("a", "b");
    HttpResponse<Buffer> r = openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}");
    assertThat(r.bodyAsJsonObject().getJsonArray("choices").getJsonObject(0).getString("finish_reason"))
        .isEqualTo("stop");
  }

  @Test
  void anAnswerLargerThanTheBodyLimitIs413AndWithdrawsTheStream() {
    cluster.reply = List.of("x".repeat(MAX_BODY / 2), "y".repeat(MAX_BODY / 2 + 1));
    HttpResponse<Buffer> r = openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}");
    error(r, 413, null);
    assertThat(cluster.last().context().cancellation().isCancelled()).isTrue();
  }

  @Test
  void theLocalityAndTimeoutHeadersApplyAsToEveryProtocol() {
    openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}", Map.of("kiln-node", "node-c",
        "kiln-timeout-ms", "2000"));
    assertThat(cluster.last().node()).isEqualTo("node-c");
    long left = cluster.last().deadlineNanos() - cluster.last().sentAtNanos();
    assertThat(left).isBetween(1_000_000_000L, 2_000_000_000L);
    error(openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}", Map.of("kiln-timeout-ms", "soon")),
        400, null);
  }

  @Test
  void theTraceparentIsCarriedToThePoolAndAnswered() {
    String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    HttpResponse<Buffer> r = openai("/v1/completions", "{\"model\": \"llm\", \"prompt\": \"p\"}",
        Map.of("traceparent", traceparent));
    assertThat(r.getHeader("traceparent")).isEqualTo(traceparent);
    assertThat(cluster.last().context().traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
  }
}
