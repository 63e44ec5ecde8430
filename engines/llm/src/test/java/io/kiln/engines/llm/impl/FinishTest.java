package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.TextModels;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a generation ends: a stop string, max_tokens, the context's end, or the end-of-sequence token. */
class FinishTest {

  /** "update SunderyetELY ~hower crawsight Nib ...": tokens update, Sunder, yet, ELY, ~, hower, craw, sight, ... */
  private static final Reference HELLO = Reference.prompts().get(0);
  private static DecoderRunner runner;

  @BeforeAll
  static void load() {
    runner = TestModels.decoder(Map.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  @Test
  void aStopStringEndsTheTextBeforeIt() {
    Result r = TestModels.runOne(runner, HELLO.greedy(TextModels.STOP, "hower"));
    assertThat(r.text()).isEqualTo("update SunderyetELY ~");
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_STOP);
    assertThat(r.completionTokens()).isEqualTo(6);
  }

  @Test
  void textThatMayStartAStopStringIsHeldBack() {
    Result r = TestModels.runOne(runner, HELLO.greedy(TextModels.STOP, "yetEL"));
    assertThat(r.text()).isEqualTo("update Sunder");
    assertThat(r.deltas()).containsExactly("update", " Sunder", "", "");
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_STOP);
  }

  @Test
  void stopStringsAsAJsonArrayTheFirstToAppearWins() {
    Result r = TestModels.runOne(runner, HELLO.greedy(TextModels.STOP, "[\"never there\", \" Nib\", \"craw\"]"));
    assertThat(r.text()).isEqualTo("update SunderyetELY ~hower ");
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_STOP);
  }

  @Test
  void heldBackTextIsReleasedWhenItTurnsOutNotToBeAStop() {
    Result r = TestModels.runOne(runner, HELLO.greedy(TextModels.STOP, "Sunderland"));
    assertThat(r.text()).isEqualTo(HELLO.greedyText());
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
  }

  @Test
  void maxTokensEndsWithLength() {
    Result r = TestModels.runOne(runner, HELLO.greedy(TextModels.MAX_TOKENS, "5"));
    assertThat(r.text()).isEqualTo("update SunderyetELY ~");
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
    assertThat(r.completionTokens()).isEqualTo(5);
    assertThat(r.deltas()).hasSize(5);
  }

  @Test
  void withoutMaxTokensItGeneratesUpToTheDefault() {
    Result r = TestModels.runOne(runner, TestModels.request(HELLO.text(), TextModels.TEMPERATURE, 0,
        TextModels.IGNORE_EOS, true));
    assertThat(r.completionTokens()).isEqualTo(DecoderRunner.DEFAULT_MAX_TOKENS);
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
    assertThat(r.text()).startsWith(HELLO.greedyText());
  }

  @Test
  void theContextsEndEndsWithLength() {
    String longPrompt = " tick".repeat(runner.contextLength() - 10); // one token each
    Result r = TestModels.runOne(runner, TestModels.request(longPrompt, // no max_tokens: the rest of the context
        TextModels.IGNORE_EOS, true, TextModels.TEMPERATURE, 0L));
    assertThat(r.promptTokens()).isEqualTo(runner.contextLength() - 10);
    assertThat(r.completionTokens()).isEqualTo(10);
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
  }

  @Test
  void theEndOfSequenceTokenStopsUnlessIgnored(@TempDir Path tmp) {
    // Declare the reference's second greedy token (" Sunder") an end-of-sequence token of a copy of the model.
    int second = HELLO.greedyIds()[1];
    Path folder = TestModels.variant(TestModels.tinyGpt(), tmp, Map.of("generation_config.json",
        "{\"bos_token_id\": 50256, \"eos_token_id\": [50256, " + second + "]}"));
    try (DecoderRunner eos = DecoderLoader.load(TestModels.decoderSpec(folder, Map.of()), List.of())) {
      Result stopped = TestModels.runOne(eos, TestModels.request(HELLO.text(), TextModels.TEMPERATURE, 0L,
          TextModels.MAX_TOKENS, 16L));
      assertThat(stopped.text()).isEqualTo("update");
      assertThat(stopped.finishReason()).isEqualTo(TextModels.FINISH_STOP);
      assertThat(stopped.completionTokens()).isEqualTo(2);
      assertThat(stopped.tokens()).containsExactly(HELLO.greedyIds()[0], second);
      Result ignored = TestModels.runOne(eos, HELLO.greedy());
      assertThat(ignored.tokens()).containsExactly(HELLO.greedyIds());
      assertThat(ignored.text()).isEqualTo(HELLO.greedyText());
      assertThat(ignored.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
    }
  }
}
