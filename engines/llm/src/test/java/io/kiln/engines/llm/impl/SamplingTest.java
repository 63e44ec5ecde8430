package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Seeded sampling repeats itself, whatever runs beside it; different seeds and unseeded requests differ. */
class SamplingTest {

  private static final List<Reference> PROMPTS = Reference.prompts();
  private static DecoderRunner runner;

  @BeforeAll
  static void load() {
    runner = TestModels.decoder(Map.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  private static InferenceRequest sampled(Object seed, Object... more) {
    List<Object> p = new ArrayList<>(List.of(TextModels.TEMPERATURE, 0.9, TextModels.MAX_TOKENS, 16L,
        TextModels.IGNORE_EOS, true));
    if (seed != null) {
      p.add(TextModels.SEED);
      p.add(seed);
    }
    p.addAll(List.of(more));
    return TestModels.request(PROMPTS.get(0).text(), p.toArray());
  }

  @Test
  void theSameSeedGivesTheSameText() {
    Result once = TestModels.runOne(runner, sampled(1234L));
    Result again = TestModels.runOne(runner, sampled("1234"));
    assertThat(again.text()).isEqualTo(once.text());
    assertThat(again.tokens()).containsExactly(once.tokens());
    assertThat(once.tokens()).isNotEqualTo(PROMPTS.get(0).greedyIds());
  }

  @Test
  void theSameSeedGivesTheSameTextWhateverItIsBatchedWith() {
    Result alone = TestModels.runOne(runner, sampled(99L));
    List<InferenceRequest> batch = new ArrayList<>();
    batch.add(PROMPTS.get(2).greedy());
    batch.add(sampled(7L));
    batch.add(sampled(99L));
    Result batched = TestModels.runAll(runner, batch).get(2);
    assertThat(batched.tokens()).containsExactly(alone.tokens());
  }

  @Test
  void differentSeedsGiveDifferentTexts() {
    Set<String> texts = new HashSet<>();
    for (long seed = 1; seed <= 5; seed++) {
      texts.add(TestModels.runOne(runner, sampled(seed)).text());
    }
    assertThat(texts).hasSizeGreaterThan(1);
  }

  @Test
  void withoutASeedEachRequestDrawsItsOwn() {
    Result a = TestModels.runOne(runner, sampled(null));
    Result b = TestModels.runOne(runner, sampled(null));
    assertThat(a.tokens()).isNotEqualTo(b.tokens());
  }

  @Test
  void topKAndTopPAreSeededToo() {
    for (Object[] extra : new Object[][] {{TextModels.TOP_K, 5L}, {TextModels.TOP_P, 0.5},
        {TextModels.TOP_K, 40L, TextModels.TOP_P, "0.9"}}) {
      Result once = TestModels.runOne(runner, sampled(5L, extra));
      Result again = TestModels.runOne(runner, sampled(5L, extra));
      assertThat(again.tokens()).containsExactly(once.tokens());
    }
  }

  @Test
  void topKOneAndTemperatureZeroAreGreedy() {
    Reference ref = PROMPTS.get(1);
    Result topK = TestModels.runOne(runner, TestModels.request(ref.text(), TextModels.TOP_K, 1L,
        TextModels.SEED, 3L, TextModels.MAX_TOKENS, 16L, TextModels.IGNORE_EOS, true));
    assertThat(topK.tokens()).containsExactly(ref.greedyIds());
    Result zero = TestModels.runOne(runner, TestModels.request(ref.text(), TextModels.TEMPERATURE, "0",
        TextModels.SEED, 3L, TextModels.MAX_TOKENS, 16L, TextModels.IGNORE_EOS, true));
    assertThat(zero.tokens()).containsExactly(ref.greedyIds());
  }
}
