package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.TestModels.Collected;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Streams that join a runner at chosen steps, stepped as a worker steps them: the scheduling tests' workload (random
 * prompts over a mixed word list, several joining in one step, prefill padded and chunked beside decodes).
 */
final class JoinPlan {

  static final String[] WORDS = ("the of and to in is was for on that with as by at from river house garden"
      + " winter morning engine kiln model stream token batch quiet yellow seven Paris Tokyo café naïve 42 1999 ! ? ,"
      + " . ; ( ) hello world story mountain library ocean silver forest city").split(" ");

  /** One stream: its prompt, the tokens it asks for, the step it joins at. */
  record Planned(String prompt, int maxTokens, int joinStep) {
  }

  private JoinPlan() {
  }

  /** Prompts of 1 to ~100 words, 1 to 12 tokens each, joining in the first 20 steps (several in one step). */
  static List<Planned> random(Random random, int n) {
    List<Planned> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      StringBuilder prompt = new StringBuilder();
      int words = 1 + random.nextInt(random.nextBoolean() ? 8 : 100);
      for (int w = 0; w < words; w++) {
        prompt.append(w == 0 ? "" : " ").append(WORDS[random.nextInt(WORDS.length)]);
      }
      out.add(new Planned(prompt.toString(), 1 + random.nextInt(12), random.nextInt(20)));
    }
    return out;
  }

  /** Steps the plan on {@code runner} until every stream ended; each stream's generated tokens, in plan order. */
  static List<int[]> run(DecoderRunner runner, List<Planned> plan) {
    Collected[] streams = new Collected[plan.size()];
    List<Collected> open = new ArrayList<>();
    int joined = 0;
    for (int step = 0; joined < plan.size() || open.stream().anyMatch(c -> !c.ended()); step++) {
      assertThat(step).as("steps").isLessThan(10_000);
      for (int i = 0; i < plan.size(); i++) {
        if (plan.get(i).joinStep() == step) {
          streams[i] = TestModels.open(runner, greedy(plan.get(i).prompt(), plan.get(i).maxTokens()));
          open.add(streams[i]);
          joined++;
        }
      }
      TestModels.step(runner, open);
    }
    List<int[]> out = new ArrayList<>();
    for (Collected c : streams) {
      out.add(c.result().tokens());
    }
    return out;
  }

  /** A greedy request for {@code maxTokens} tokens that does not stop at end-of-text. */
  static InferenceRequest greedy(String prompt, int maxTokens) {
    return TestModels.request(prompt, TextModels.MAX_TOKENS, (long) maxTokens, TextModels.TEMPERATURE, 0L,
        TextModels.IGNORE_EOS, true);
  }
}
