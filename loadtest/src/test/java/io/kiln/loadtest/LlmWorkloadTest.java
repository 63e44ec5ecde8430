package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LlmWorkloadTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JsonNode body(LlmWorkload w, long i) throws Exception {
    return JSON.readTree(w.request(i).body());
  }

  @Test
  void completionsRequestsAreStreamedWithExactLengthsAndTheSameForTheSameSeed() throws Exception {
    LlmWorkload w = LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "tiny-gpt", 20, 7);
    HttpCall call = w.request(3);
    assertThat(call.path()).isEqualTo("/v1/completions");
    assertThat(call.headers()).containsEntry("content-type", "application/json");
    JsonNode b = body(w, 3);
    assertThat(b.path("model").asText()).isEqualTo("tiny-gpt");
    assertThat(b.path("max_tokens").asInt()).isEqualTo(7);
    assertThat(b.path("ignore_eos").asBoolean()).isTrue();
    assertThat(b.path("stream").asBoolean()).isTrue();
    assertThat(b.path("stream_options").path("include_usage").asBoolean()).isTrue();
    assertThat(b.path("prompt").asText().split(" ")).hasSize(20);
    assertThat(w.request(3).body()).isEqualTo(LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "tiny-gpt", 20, 7)
        .request(3).body());
    assertThat(body(w, 4).path("prompt").asText()).isNotEqualTo(b.path("prompt").asText());
  }

  @Test
  void lengthsFollowTheDistributionAndPrefixesAreShared() throws Exception {
    LlmWorkload w = new LlmWorkload(LlmWorkload.Api.CHAT, "m", 100, 20, 50, 10, 4, 30, 9);
    double promptSum = 0;
    double outSum = 0;
    int n = 2000;
    Set<String> systems = new HashSet<>();
    for (int i = 0; i < n; i++) {
      LlmWorkload.Shape s = w.shape(i);
      assertThat(s.prefix()).isBetween(0, 3);
      assertThat(s.promptWords()).isPositive();
      promptSum += s.promptWords();
      outSum += s.maxTokens();
      if (i < 200) {
        JsonNode b = body(w, i);
        JsonNode messages = b.path("messages");
        assertThat(messages.path(0).path("role").asText()).isEqualTo("system");
        assertThat(messages.path(0).path("content").asText().split(" ")).hasSize(30);
        assertThat(messages.path(0).path("content").asText()).isEqualTo(w.prefixText(s.prefix()));
        assertThat(messages.path(1).path("content").asText().split(" ")).hasSize(s.promptWords());
        assertThat(b.path("max_tokens").asInt()).isEqualTo(s.maxTokens());
        systems.add(messages.path(0).path("content").asText());
      }
    }
    assertThat(promptSum / n).isBetween(97.0, 103.0);
    assertThat(outSum / n).isBetween(48.5, 51.5);
    assertThat(systems).hasSize(4);
  }

  @Test
  void invalidWorkloadsAreRefused() {
    assertThatThrownBy(() -> LlmWorkload.of(LlmWorkload.Api.CHAT, "m", 0, 5))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> LlmWorkload.Api.parse("embeddings")).hasMessageContaining("completions or chat");
  }

  @Test
  void aWholeAnswerWorkloadSendsTheSamePromptsWithoutStreamingAndDriversWithoutHttpGetThemToo() throws Exception {
    LlmWorkload streamed = LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "m", 12, 5).withPrefixes(3, 9);
    LlmWorkload whole = streamed.withStream(false);
    for (long i = 0; i < 20; i++) {
      JsonNode a = body(streamed, i);
      JsonNode b = body(whole, i);
      assertThat(b.path("stream").asBoolean(true)).isFalse();
      assertThat(b.has("stream_options")).isFalse();
      assertThat(b.path("prompt").asText()).isEqualTo(a.path("prompt").asText())
          .isEqualTo(streamed.completionPrompt(i));
      assertThat(b.path("max_tokens").asInt()).isEqualTo(a.path("max_tokens").asInt());
    }
    // Another seed: other prompts and other shared prefixes.
    assertThat(streamed.withSeed(7).completionPrompt(0)).isNotEqualTo(streamed.completionPrompt(0));
    assertThat(streamed.withSeed(7).prefixText(0)).isNotEqualTo(streamed.prefixText(0));
  }
}
