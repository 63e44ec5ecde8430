package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SamplerTest {

  private static Sampler.Scratch logits(float... values) {
    Sampler.Scratch s = new Sampler.Scratch(values.length);
    System.arraycopy(values, 0, s.logits, 0, values.length);
    return s;
  }

  @Test
  void greedyTakesTheLowestIdAmongTies() {
    assertThat(new Sampler(0, 1, 0, 1).sample(logits(1f, 3f, 3f, -2f))).isEqualTo(1);
  }

  @Test
  void topKSamplesOnlyAmongTheKBest() {
    Set<Integer> seen = new HashSet<>();
    Sampler s = new Sampler(1, 1, 2, 42);
    for (int i = 0; i < 200; i++) {
      seen.add(s.sample(logits(0f, 5f, 1f, 5f, 4.9f)));
    }
    assertThat(seen).containsExactlyInAnyOrder(1, 3);
  }

  @Test
  void topPKeepsTheSmallestSetReachingTheMass() {
    // Softmax of (ln 6, ln 3, ln 1): 0.6, 0.3, 0.1; top_p 0.85 keeps the first two.
    Set<Integer> seen = new HashSet<>();
    Sampler s = new Sampler(1, 0.85, 0, 7);
    for (int i = 0; i < 300; i++) {
      seen.add(s.sample(logits((float) Math.log(1), (float) Math.log(6), (float) Math.log(3))));
    }
    assertThat(seen).containsExactlyInAnyOrder(1, 2);
  }

  @Test
  void topPOverAWideVocabularySortsItAll() {
    float[] flat = new float[5000]; // uniform: the nucleus of 0.9 needs 4500 tokens, past the first candidates
    Sampler.Scratch scratch = logits(flat);
    Sampler s = new Sampler(1, 0.9, 0, 3);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 2000; i++) {
      System.arraycopy(flat, 0, scratch.logits, 0, flat.length);
      seen.add(s.sample(scratch));
    }
    assertThat(seen).allMatch(id -> id < 4500);
    assertThat(seen.stream().mapToInt(Integer::intValue).max().getAsInt()).isGreaterThan(4000);
  }

  @Test
  void keysOrderByLogitThenId() {
    assertThat(Sampler.key(2f, 9)).isLessThan(Sampler.key(1f, 0));
    assertThat(Sampler.key(-1f, 3)).isLessThan(Sampler.key(-2f, 0));
    assertThat(Sampler.key(1f, 2)).isLessThan(Sampler.key(1f, 3));
    assertThat(Sampler.key(0f, 1)).isLessThan(Sampler.key(-0.5f, 0));
  }
}
