package io.kiln.engines.llm.impl;

import static io.kiln.engines.llm.impl.JoinPlan.greedy;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.JoinPlan.Planned;
import io.kiln.engines.llm.impl.TestModels.Collected;
import io.kiln.pools.ChunkStep;
import io.kiln.pools.InferenceRequest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The {@code schedule} option on the real tiny-gpt models: {@code prefill-first} runs waiting prompts' prefill in
 * steps without decode rows, bounded by {@code max_prefill_steps} in a row, and changes no token; {@code mixed}
 * decodes everyone every step. Streams join at seeded random steps, with chunked prefill and preemption.
 */
class SchedulePolicyTest {

  private static final String PREFILL_FIRST = DecoderOptions.Schedule.PREFILL_FIRST.yaml();
  private static final String MIXED = DecoderOptions.Schedule.MIXED.yaml();

  @Test
  void bothSchedulesGiveTorchsTokensForTheReferencePrompts() {
    List<Reference> refs = Reference.prompts();
    for (String schedule : List.of(PREFILL_FIRST, MIXED)) {
      try (DecoderRunner runner = TestModels.decoder(Map.of(DecoderOptions.SCHEDULE, schedule))) {
        List<TestModels.Result> got = TestModels.runAll(runner, refs.stream().map(r -> r.greedy()).toList());
        for (int i = 0; i < refs.size(); i++) {
          assertThat(got.get(i).tokens()).as("%s: %s", schedule, refs.get(i).text())
              .containsExactly(refs.get(i).greedyIds());
        }
      }
    }
  }

  @Test
  void joiningStreamsGetIdenticalGreedyTokensUnderBothSchedules() {
    for (Path folder : List.of(TestModels.tinyGpt(), TestModels.folder("tiny-gpt-last"))) {
      for (Map<String, String> options : List.of(Map.<String, String>of(),
          Map.of(DecoderOptions.MAX_BATCHED_TOKENS, "16"),
          Map.of(DecoderOptions.KV_CACHE_TOKENS, "256", DecoderOptions.BLOCK_SIZE, "16"))) {
        List<Planned> plan = JoinPlan.random(new Random(36), 40);
        Run mixed = run(folder, with(options, DecoderOptions.SCHEDULE, MIXED), plan);
        Run first = run(folder, with(options, DecoderOptions.SCHEDULE, PREFILL_FIRST), plan);
        for (int i = 0; i < plan.size(); i++) {
          assertThat(first.tokens.get(i)).as("%s %s, stream %d", folder.getFileName(), options, i)
              .containsExactly(mixed.tokens.get(i));
          assertThat(mixed.tokens.get(i)).hasSize(plan.get(i).maxTokens());
        }
        assertThat(mixed.stats.prefillOnlySteps()).isZero();
        assertThat(first.stats.prefillOnlySteps()).isGreaterThan(0);
        if (options.containsKey(DecoderOptions.KV_CACHE_TOKENS)) {
          assertThat(first.stats.preemptions()).as("preemptions, prefill-first").isGreaterThan(0);
          assertThat(mixed.stats.preemptions()).as("preemptions, mixed").isGreaterThan(0);
        }
        assertThat(first.stats.kvBlocksUsed()).isZero();
      }
    }
  }

  @Test
  void anArrivalsPrefillRunsInAStepOfItsOwnAndGetsItsFirstTokenThere() {
    for (String schedule : List.of(PREFILL_FIRST, MIXED)) {
      try (DecoderRunner runner = TestModels.decoder(Map.of(DecoderOptions.SCHEDULE, schedule))) {
        Collected decoding = TestModels.open(runner, greedy("The quick brown fox", 8));
        TestModels.step(runner, List.of(decoding)); // its prefill and first token
        Collected arrival = TestModels.open(runner, greedy("Hello, my name is", 8));
        long runs = runner.stats().modelRuns();
        List<ChunkStep> step = runner.next(List.of(decoding.stream, arrival.stream));
        assertThat(step.get(1).pending()).as("%s: the arrival's first token", schedule).isFalse();
        if (schedule.equals(PREFILL_FIRST)) {
          assertThat(step.get(0)).as("no decode row in a prefill step").isEqualTo(ChunkStep.PENDING);
          assertThat(runner.stats().modelRuns()).as("one run: the prompt's").isEqualTo(runs + 1);
          assertThat(runner.stats().prefillOnlySteps()).isEqualTo(2);
        } else {
          assertThat(step.get(0).pending()).as("mixed: the decode row rides along").isFalse();
          assertThat(runner.stats().modelRuns()).as("a decode run and a prefill run").isEqualTo(runs + 2);
          assertThat(runner.stats().prefillOnlySteps()).isZero();
        }
        List<ChunkStep> next = runner.next(List.of(decoding.stream, arrival.stream));
        assertThat(next).noneMatch(ChunkStep::pending); // nobody waits to be prefilled: everyone decodes
      }
    }
  }

  @Test
  void aConstantArrivalStreamDelaysDecodingByAtMostMaxPrefillStepsAndChangesNoToken() {
    InferenceRequest longRequest = greedy("Once upon a time", 40);
    int[] alone;
    try (DecoderRunner plain = TestModels.decoder(Map.of(DecoderOptions.SCHEDULE, MIXED))) {
      alone = TestModels.runOne(plain, longRequest).tokens();
    }
    int maxPrefillSteps = 2;
    try (DecoderRunner runner = TestModels.decoder(Map.of(DecoderOptions.SCHEDULE, PREFILL_FIRST,
        DecoderOptions.MAX_PREFILL_STEPS, String.valueOf(maxPrefillSteps)))) {
      Collected decoding = TestModels.open(runner, longRequest);
      List<Collected> all = new ArrayList<>(List.of(decoding));
      TestModels.step(runner, all);
      int arrivals = 30;
      int sinceToken = 0;
      int longestWait = 0;
      for (int i = 0; i < arrivals; i++) { // a new prompt waits at every step
        all.add(TestModels.open(runner, greedy(JoinPlan.WORDS[i % JoinPlan.WORDS.length] + " river " + i, 30)));
        int before = decoding.result().tokens().length;
        TestModels.step(runner, all);
        sinceToken = decoding.result().tokens().length > before ? 0 : sinceToken + 1;
        longestWait = Math.max(longestWait, sinceToken);
      }
      assertThat(longestWait).as("steps in a row without the decoding stream's token").isEqualTo(maxPrefillSteps);
      assertThat(decoding.result().tokens().length).as("its tokens in %d steps", arrivals + 1)
          .isGreaterThanOrEqualTo(1 + arrivals / (maxPrefillSteps + 1));
      assertThat(runner.stats().prefillOnlySteps()).isEqualTo(1 + arrivals * maxPrefillSteps / (maxPrefillSteps + 1));
      int guard = 0;
      while (TestModels.step(runner, all)) {
        assertThat(++guard).isLessThan(1_000);
      }
      assertThat(decoding.result().tokens()).containsExactly(alone);
      assertThat(all).allMatch(c -> c.result().tokens().length == c.result().completionTokens());
      assertThat(runner.stats().kvBlocksUsed()).isZero();
    }
  }

  @Test
  void closingAnArrivalMidPrefillFreesItsBlocksAndDecodingGoesOn() {
    Reference longPrompt = Reference.prompts().get(2); // 38 tokens: five chunks of 8
    InferenceRequest shortRequest = greedy("The quick brown fox", 10);
    int[] alone;
    try (DecoderRunner plain = TestModels.decoder(Map.of(DecoderOptions.SCHEDULE, MIXED))) {
      alone = TestModels.runOne(plain, shortRequest).tokens();
    }
    try (DecoderRunner runner = TestModels.decoder(Map.of(DecoderOptions.SCHEDULE, PREFILL_FIRST,
        DecoderOptions.MAX_BATCHED_TOKENS, "8"))) {
      Collected decoding = TestModels.open(runner, shortRequest);
      List<Collected> both = new ArrayList<>(List.of(decoding));
      TestModels.step(runner, both); // its 4-token prompt and first token
      int ownBlocks = runner.stats().kvBlocksUsed();
      Collected arrival = TestModels.open(runner, longPrompt.greedy());
      both.add(arrival);
      List<ChunkStep> steps = runner.next(List.of(decoding.stream, arrival.stream));
      assertThat(steps).containsExactly(ChunkStep.PENDING, ChunkStep.PENDING); // 8 of its 38 tokens, no decode
      steps = runner.next(List.of(decoding.stream, arrival.stream));
      assertThat(steps).containsExactly(ChunkStep.PENDING, ChunkStep.PENDING); // 16 of 38
      assertThat(runner.stats().kvBlocksUsed()).isEqualTo(ownBlocks + 1);
      arrival.stream.close();
      both.remove(arrival);
      assertThat(runner.stats().kvBlocksUsed()).isEqualTo(ownBlocks);
      assertThat(runner.stats().running() + runner.stats().waiting()).isEqualTo(1);
      int guard = 0;
      while (TestModels.step(runner, both)) {
        assertThat(++guard).isLessThan(100);
      }
      assertThat(decoding.result().tokens()).containsExactly(alone);
      assertThat(runner.stats().kvBlocksUsed()).isZero();
    }
  }

  @Test
  void theScheduleOptionIsReadAndCheckedByName() {
    assertThat(DecoderOptions.of(Map.of()).schedule()).isEqualTo(DecoderOptions.DEFAULT_SCHEDULE);
    assertThat(DecoderOptions.of(Map.of(DecoderOptions.SCHEDULE, " Prefill-First ")).schedule())
        .isEqualTo(DecoderOptions.Schedule.PREFILL_FIRST);
    assertThat(DecoderOptions.of(Map.of(DecoderOptions.SCHEDULE, "mixed", DecoderOptions.MAX_PREFILL_STEPS, "3")))
        .extracting(DecoderOptions::schedule, DecoderOptions::maxPrefillSteps)
        .containsExactly(DecoderOptions.Schedule.MIXED, 3);
    assertThat(DecoderOptions.problems(Map.of(DecoderOptions.MAX_PREFILL_STEPS, "0")).get(0).field())
        .isEqualTo("options.max_prefill_steps");
    assertThat(DecoderOptions.problems(Map.of(DecoderOptions.SCHEDULE, "")).get(0).field())
        .isEqualTo("options.schedule");
  }

  private static Map<String, String> with(Map<String, String> options, String name, String value) {
    Map<String, String> m = new HashMap<>(options);
    m.put(name, value);
    return m;
  }


  private record Run(List<int[]> tokens, DecoderStats stats) {
  }


  /** Runs the plan as a worker steps it; each stream's generated tokens, in plan order, and the final counters. */
  private static Run run(Path folder, Map<String, String> options, List<Planned> plan) {
    try (DecoderRunner runner = DecoderLoader.load(TestModels.decoderSpec(folder, options), List.of())) {
      List<int[]> tokens = JoinPlan.run(runner, plan);
      return new Run(tokens, runner.stats());
    }
  }

}
