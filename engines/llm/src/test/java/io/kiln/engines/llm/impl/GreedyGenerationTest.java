package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.TestModels.Collected;
import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Greedy generation is token-exact to torch's reference however the scheduler batches, chunks or preempts it. */
class GreedyGenerationTest {

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

  private static void assertExact(Reference ref, Result r) {
    assertThat(r.tokens()).as("tokens of '%s'", ref.text()).containsExactly(ref.greedyIds());
    assertThat(r.text()).isEqualTo(ref.greedyText());
    assertThat(r.finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
    assertThat(r.promptTokens()).isEqualTo(ref.inputIds().length);
    assertThat(r.completionTokens()).isEqualTo(Reference.NEW_TOKENS);
  }

  @Test
  void eachPromptAlone() {
    for (Reference ref : PROMPTS) {
      Result r = TestModels.runOne(runner, ref.greedy());
      assertExact(ref, r);
      assertThat(r.deltas()).hasSize(Reference.NEW_TOKENS); // one chunk per token, the last with the finish
    }
    assertThat(runner.stats().running()).isZero();
    assertThat(runner.stats().kvBlocksUsed()).isZero();
  }

  @Test
  void allPromptsAsOneContinuousBatch() {
    long runsBefore = runner.stats().modelRuns();
    long stepsBefore = runner.stats().steps();
    List<Result> results = TestModels.runAll(runner, PROMPTS.stream().map(Reference::greedy).toList());
    for (int i = 0; i < PROMPTS.size(); i++) {
      assertExact(PROMPTS.get(i), results.get(i));
    }
    // One prefill run (all prompts), then one decode run per step: all three advance together.
    assertThat(runner.stats().steps() - stepsBefore).isEqualTo(Reference.NEW_TOKENS);
    assertThat(runner.stats().modelRuns() - runsBefore).isEqualTo(Reference.NEW_TOKENS);
  }

  @Test
  void streamsJoiningWhileOthersDecode() {
    List<Collected> open = new ArrayList<>();
    open.add(TestModels.open(runner, PROMPTS.get(0).greedy()));
    for (int i = 0; i < 3; i++) {
      TestModels.step(runner, open);
    }
    open.add(TestModels.open(runner, PROMPTS.get(1).greedy()));
    for (int i = 0; i < 5; i++) {
      TestModels.step(runner, open);
    }
    open.add(TestModels.open(runner, PROMPTS.get(2).greedy()));
    while (TestModels.step(runner, open)) {
      // the third joins while the first two decode
    }
    for (int i = 0; i < PROMPTS.size(); i++) {
      assertExact(PROMPTS.get(i), open.get(i).result());
    }
  }

  @Test
  void chunkedPrefillNeverStallsDecodes() { // under schedule: mixed (prefill-first: SchedulePolicyTest)
    try (DecoderRunner small = TestModels.decoder(Map.of("max_batched_tokens", "8", "schedule", "mixed"))) {
      List<Collected> open = new ArrayList<>();
      open.add(TestModels.open(small, PROMPTS.get(0).greedy()));
      open.add(TestModels.open(small, PROMPTS.get(1).greedy()));
      while (open.get(0).result().deltas().isEmpty() || open.get(1).result().deltas().isEmpty()) {
        TestModels.step(small, open);
      }
      Collected longPrompt = TestModels.open(small, PROMPTS.get(2).greedy()); // 38 tokens: 6 per step
      open.add(longPrompt);
      int prefillSteps = 0;
      while (longPrompt.result().deltas().isEmpty()) {
        int before0 = open.get(0).result().deltas().size();
        int before1 = open.get(1).result().deltas().size();
        TestModels.step(small, open);
        prefillSteps++;
        if (!open.get(0).ended()) {
          assertThat(open.get(0).result().deltas()).as("decodes go on during the prefill").hasSize(before0 + 1);
        }
        if (!open.get(1).ended()) {
          assertThat(open.get(1).result().deltas()).hasSize(before1 + 1);
        }
      }
      assertThat(prefillSteps).as("38 prompt tokens beside 2 decodes in steps of 8").isGreaterThanOrEqualTo(6);
      while (TestModels.step(small, open)) {
        // to the end
      }
      for (int i = 0; i < PROMPTS.size(); i++) {
        assertExact(PROMPTS.get(i), open.get(i).result());
      }
    }
  }

  @Test
  void chunkedPrefillAlone() {
    try (DecoderRunner small = TestModels.decoder(Map.of("max_batched_tokens", "8", "prefix_cache", "false"))) {
      List<Result> results = TestModels.runAll(small, PROMPTS.stream().map(Reference::greedy).toList());
      for (int i = 0; i < PROMPTS.size(); i++) {
        assertExact(PROMPTS.get(i), results.get(i));
      }
    }
  }

  @Test
  void preemptionWhenTheKvCacheRunsOutKeepsTheTokens() {
    // 16 blocks of 4: the three sequences need 6 + 5 + 14 blocks at their ends, so some must be preempted.
    try (DecoderRunner tiny = TestModels.decoder(Map.of("kv_cache_tokens", "64", "block_size", "4"))) {
      List<Result> results = TestModels.runAll(tiny, PROMPTS.stream().map(Reference::greedy).toList());
      DecoderStats stats = tiny.stats();
      assertThat(stats.preemptions()).isPositive();
      for (int i = 0; i < PROMPTS.size(); i++) {
        assertExact(PROMPTS.get(i), results.get(i));
      }
      assertThat(stats.kvBlocksUsed()).isZero();
      assertThat(stats.running() + stats.waiting()).isZero();
    }
  }

  @Test
  void preemptionWithoutThePrefixCache() {
    try (DecoderRunner tiny = TestModels.decoder(Map.of("kv_cache_tokens", "64", "block_size", "4",
        "prefix_cache", "false", "max_batched_tokens", "16"))) {
      List<Result> results = TestModels.runAll(tiny, PROMPTS.stream().map(Reference::greedy).toList());
      assertThat(tiny.stats().preemptions()).isPositive();
      for (int i = 0; i < PROMPTS.size(); i++) {
        assertExact(PROMPTS.get(i), results.get(i));
      }
    }
  }
}
