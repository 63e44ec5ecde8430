package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Requests that cannot run fail at open with INVALID_INPUT naming the parameter; lenient forms are accepted. */
class RequestValidationTest {

  private static DecoderRunner runner;

  @BeforeAll
  static void load() {
    runner = TestModels.decoder(Map.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  private static void assertInvalid(ThrowingCallable call, String parameter) {
    assertThatThrownBy(call).isInstanceOfSatisfying(InferenceException.class, e -> {
      assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT);
      assertThat(e.getMessage()).startsWith(parameter + ": ");
    });
    assertThat(runner.stats().waiting() + runner.stats().running()).isZero();
  }

  private static void assertParameterInvalid(String parameter, Object value) {
    assertInvalid(() -> runner.open(TestModels.request("Hello", parameter, value)), parameter);
  }

  @Test
  void wrongParametersAreNamed() {
    assertParameterInvalid(TextModels.MAX_TOKENS, 0L);
    assertParameterInvalid(TextModels.MAX_TOKENS, "many");
    assertParameterInvalid(TextModels.MAX_TOKENS, 2.5);
    assertParameterInvalid(TextModels.TEMPERATURE, -0.1);
    assertParameterInvalid(TextModels.TEMPERATURE, "hot");
    assertParameterInvalid(TextModels.TOP_P, 0.0);
    assertParameterInvalid(TextModels.TOP_P, 1.5);
    assertParameterInvalid(TextModels.TOP_K, -3L);
    assertParameterInvalid(TextModels.SEED, 1.5);
    assertParameterInvalid(TextModels.SEED, true);
    assertParameterInvalid(TextModels.STOP, "[\"a\", \"b\", \"c\", \"d\", \"e\"]");
    assertParameterInvalid(TextModels.STOP, "[1, 2]");
    assertParameterInvalid(TextModels.STOP, "[\"unclosed\"");
    assertParameterInvalid(TextModels.STOP, "[\"\"]");
    assertParameterInvalid(TextModels.IGNORE_EOS, "maybe");
    assertParameterInvalid(TextModels.INPUT_FORMAT, "xml");
  }

  @Test
  void numbersAndBooleansMayComeAsTextOrEitherNumberType() {
    GenerationParams p = GenerationParams.of(Map.of(TextModels.MAX_TOKENS, "7", TextModels.TEMPERATURE, 1L,
        TextModels.TOP_P, "0.5", TextModels.TOP_K, 3.0, TextModels.SEED, "-12", TextModels.IGNORE_EOS, "true",
        TextModels.STOP, "end", TextModels.INPUT_FORMAT, "TEXT"));
    assertThat(p.maxTokens()).hasValue(7);
    assertThat(p.temperature()).isEqualTo(1.0);
    assertThat(p.topP()).isEqualTo(0.5);
    assertThat(p.topK()).isEqualTo(3);
    assertThat(p.seed()).hasValue(-12);
    assertThat(p.ignoreEos()).isTrue();
    assertThat(p.stop()).containsExactly("end");
    assertThat(p.chat()).isFalse();
    GenerationParams defaults = GenerationParams.of(Map.of());
    assertThat(defaults.maxTokens()).isEmpty();
    assertThat(defaults.temperature()).isEqualTo(1.0);
    assertThat(defaults.seed()).isEmpty();
    assertThat(defaults.stop()).isEmpty();
    assertThat(GenerationParams.of(Map.of(TextModels.TOP_K, -1L)).topK()).isZero(); // vLLM's "all"
    assertThat(GenerationParams.of(Map.of(TextModels.STOP, List.of("a", "b"))).stop()).containsExactly("a", "b");
  }

  @Test
  void onePromptPerRequest() {
    InferenceRequest two = new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {2},
        List.of("a".getBytes(StandardCharsets.UTF_8), "b".getBytes(StandardCharsets.UTF_8)))), List.of(), Map.of());
    assertInvalid(() -> runner.open(two), TextModels.TEXT_INPUT);
    InferenceRequest none = new InferenceRequest("", List.of(Tensor.ofFloats("other", new long[] {1},
        new float[] {1})), List.of(), Map.of());
    assertInvalid(() -> runner.open(none), TextModels.TEXT_INPUT);
    InferenceRequest latin1 = new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {1},
        List.of(new byte[] {(byte) 0xe9}))), List.of(), Map.of());
    assertInvalid(() -> runner.open(latin1), TextModels.TEXT_INPUT);
  }

  @Test
  void aPromptThatLeavesNoRoomInTheContextIsRefused() {
    String prompt = " tick".repeat(runner.contextLength());
    assertInvalid(() -> runner.open(TestModels.request(prompt)), TextModels.TEXT_INPUT);
  }

  @Test
  void aPromptLongerThanTheKvCacheIsRefused() {
    try (DecoderRunner small = TestModels.decoder(Map.of("kv_cache_tokens", "32", "block_size", "8"))) {
      assertThat(small.contextLength()).isEqualTo(32);
      assertThatThrownBy(() -> small.open(TestModels.request(" tick".repeat(40))))
          .isInstanceOfSatisfying(InferenceException.class,
              e -> assertThat(e.getMessage()).startsWith("text_input: ").contains("32"));
      assertInvalid(() -> small.open(TestModels.request(" tick".repeat(30), "max_tokens", 100L)),
          TextModels.MAX_TOKENS); // asked for more than the context leaves: refused, as OpenAI's servers do
      TestModels.Result r = TestModels.runOne(small, TestModels.request(" tick".repeat(30), "ignore_eos", true));
      assertThat(r.completionTokens()).as("unasked: the rest of the context").isEqualTo(2);
      assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
    }
  }

  @Test
  void unknownOutputsAreRefusedAndNamedOnesPicked() {
    InferenceRequest wrong = new InferenceRequest("", TestModels.request("Hi").inputs(), List.of("logits"),
        Map.of());
    assertInvalid(() -> runner.open(wrong), "outputs");
    InferenceRequest some = new InferenceRequest("", TestModels.request("Hi").inputs(),
        List.of(TextModels.COMPLETION_TOKENS, TextModels.TEXT_OUTPUT), Map.of(TextModels.MAX_TOKENS, 1L));
    try (DecoderStream s = runner.open(some)) {
      List<Tensor> chunk = s.next();
      assertThat(chunk).extracting(Tensor::name).containsExactly(TextModels.COMPLETION_TOKENS,
          TextModels.TEXT_OUTPUT);
      assertThat(s.next()).isNull();
    }
  }

  @Test
  void anEmptyPromptStartsFromTheBeginningOfSequenceToken() {
    TestModels.Result r = TestModels.runOne(runner, TestModels.request("", TextModels.MAX_TOKENS, 2L));
    assertThat(r.promptTokens()).isEqualTo(1);
    assertThat(r.completionTokens()).isBetween(1, 2);
  }

  @Test
  void chatNeedsATemplate(@TempDir Path tmp) {
    Path folder = TestModels.variant(TestModels.tinyGpt(), tmp, Map.of("tokenizer_config.json",
        "{\"eos_token\": \"<|endoftext|>\", \"model_max_length\": 512}"));
    try (DecoderRunner plain = DecoderLoader.load(TestModels.decoderSpec(folder, Map.of()), List.of())) {
      assertThatThrownBy(() -> plain.open(TestModels.request("[{\"role\": \"user\", \"content\": \"hi\"}]",
          TextModels.INPUT_FORMAT, TextModels.FORMAT_CHAT)))
          .isInstanceOfSatisfying(InferenceException.class, e -> {
            assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT);
            assertThat(e.getMessage()).startsWith("input_format: ").contains("chat template");
          });
    }
  }

  @Test
  void chatMessagesMustBeAJsonArrayOfRoles() {
    Map<String, Object> chat = new HashMap<>();
    chat.put(TextModels.INPUT_FORMAT, TextModels.FORMAT_CHAT);
    for (String bad : new String[] {"not json", "{\"role\": \"user\"}", "[]", "[{\"content\": \"hi\"}]",
        "[{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]"}) {
      assertInvalid(() -> runner.open(new InferenceRequest("", TestModels.request(bad).inputs(), List.of(), chat)),
          TextModels.TEXT_INPUT);
    }
  }
}
