package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.TestModels.Collected;
import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.ChunkStep;
import io.kiln.pools.InferenceRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The prefix cache shares full blocks between sequences; closing or finishing a stream frees its blocks at once. */
class KvCacheTest {

  private static final List<Reference> PROMPTS = Reference.prompts();
  /** The long reference prompt (38 tokens: two full blocks of 16) and a prompt extending it. */
  private static final Reference LONG = PROMPTS.get(2);

  private static Reference extended() {
    String text = LONG.text() + " The next morning it rained.";
    return new Reference(text, new int[0], new int[0], "");
  }

  @Test
  void aLaterPromptReusesTheCachedBlocksOfAnEarlierOne() {
    Result uncached;
    try (DecoderRunner plain = TestModels.decoder(Map.of("prefix_cache", "false"))) {
      uncached = TestModels.runOne(plain, extended().greedy());
    }
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      Result first = TestModels.runOne(runner, LONG.greedy());
      assertThat(first.tokens()).containsExactly(LONG.greedyIds());
      Collected second = TestModels.open(runner, extended().greedy());
      List<Collected> all = List.of(second);
      while (TestModels.step(runner, all)) {
        // to the end
      }
      assertThat(((DecoderStream) second.stream).cachedPromptTokens()).isEqualTo(32);
      assertThat(runner.stats().prefixCacheHitTokens()).isEqualTo(32);
      assertThat(second.result().tokens()).containsExactly(uncached.tokens());
      assertThat(second.result().text()).isEqualTo(uncached.text());
    }
  }

  @Test
  void runningSequencesWithACommonPrefixShareItsBlocks() {
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      List<Collected> all = new ArrayList<>();
      all.add(TestModels.open(runner, LONG.greedy()));
      TestModels.step(runner, all); // the long prompt is computed: blocks 0 and 1 are full and cached
      Collected second = TestModels.open(runner, extended().greedy());
      all.add(second);
      TestModels.step(runner, all);
      int secondLength = ((DecoderStream) second.stream).seq.length();
      int blocksFirst = 3; // 39 tokens computed
      int blocksSecond = (secondLength - 1 + 15) / 16;
      assertThat(((DecoderStream) second.stream).cachedPromptTokens()).isEqualTo(32);
      assertThat(runner.stats().kvBlocksUsed()).isEqualTo(blocksFirst + blocksSecond - 2);
      while (TestModels.step(runner, all)) {
        // to the end
      }
      assertThat(all.get(0).result().tokens()).containsExactly(LONG.greedyIds());
      assertThat(runner.stats().kvBlocksUsed()).isZero();
    }
  }

  @Test
  void closingStreamsFreesEveryBlockAtOnce() {
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      List<Collected> all = new ArrayList<>();
      PROMPTS.forEach(p -> all.add(TestModels.open(runner, p.greedy())));
      for (int i = 0; i < 4; i++) {
        TestModels.step(runner, all);
      }
      DecoderStats during = runner.stats();
      assertThat(during.running()).isEqualTo(3);
      int before = during.kvBlocksUsed();
      all.get(2).stream.close(); // 38 + 4 tokens: 3 blocks
      assertThat(runner.stats().kvBlocksUsed()).isEqualTo(before - 3);
      all.get(0).stream.close();
      all.get(1).stream.close();
      DecoderStats after = runner.stats();
      assertThat(after.kvBlocksUsed()).isZero();
      assertThat(after.kvBlocksAvailable()).isEqualTo(after.kvBlocksTotal());
      assertThat(after.running() + after.waiting()).isZero();
      all.get(0).stream.close(); // idempotent
      assertThat(runner.next(List.of(all.get(1).stream))).containsExactly(ChunkStep.END);
    }
  }

  @Test
  void closingMidPrefillOrBeforeAdmissionFreesTheSequence() {
    try (DecoderRunner runner = TestModels.decoder(Map.of("max_batched_tokens", "8"))) {
      Collected prefilling = TestModels.open(runner, LONG.greedy());
      Collected waiting = TestModels.open(runner, PROMPTS.get(0).greedy());
      List<ChunkStep> steps = runner.next(List.of(prefilling.stream));
      assertThat(steps).containsExactly(ChunkStep.PENDING); // 8 of 38 prompt tokens computed
      assertThat(runner.stats().kvBlocksUsed()).isEqualTo(1);
      assertThat(runner.stats().waiting()).isEqualTo(1); // not stepped yet: still waiting
      prefilling.stream.close();
      waiting.stream.close();
      DecoderStats after = runner.stats();
      assertThat(after.kvBlocksUsed()).isZero();
      assertThat(after.running() + after.waiting()).isZero();
    }
  }

  @Test
  void aStreamWaitingForBlocksThatStreamsNotSteppedHoldPreemptsThemAndBothStayExact() {
    String twenty = " tick".repeat(20);
    InferenceRequest slowRequest = TestModels.request(twenty, "max_tokens", 4L, "temperature", 0L);
    InferenceRequest fastRequest = TestModels.request(" the".repeat(20), "max_tokens", 4L, "temperature", 0L);
    Result slowAlone;
    Result fastAlone;
    try (DecoderRunner plain = TestModels.decoder(Map.of())) {
      slowAlone = TestModels.runOne(plain, slowRequest);
      fastAlone = TestModels.runOne(plain, fastRequest);
    }
    try (DecoderRunner runner = TestModels.decoder(Map.of("kv_cache_tokens", "32", "block_size", "8"))) {
      Collected slow = TestModels.open(runner, slowRequest);
      TestModels.step(runner, List.of(slow)); // 3 of the 4 blocks; then its reader stops taking chunks
      Collected fast = TestModels.open(runner, fastRequest);
      int guard = 0;
      while (TestModels.step(runner, List.of(fast))) { // stepped alone, as a worker steps only streams with credit
        assertThat(++guard).isLessThan(100);
      }
      assertThat(runner.stats().preemptions()).isEqualTo(1);
      while (TestModels.step(runner, List.of(slow))) {
        assertThat(++guard).isLessThan(200);
      }
      assertThat(fast.result().tokens()).containsExactly(fastAlone.tokens());
      assertThat(slow.result().tokens()).as("recomputed after its preemption").containsExactly(slowAlone.tokens());
      assertThat(runner.stats().kvBlocksUsed()).isZero();
    }
  }

  @Test
  void aFinishedSequenceFreesItsBlocksWithItsLastChunk() {
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      Collected c = TestModels.open(runner, PROMPTS.get(0).greedy("max_tokens", 3L));
      List<Collected> all = List.of(c);
      while (c.result().finishReason().isEmpty()) {
        TestModels.step(runner, all);
      }
      assertThat(c.ended()).isFalse();
      assertThat(runner.stats().kvBlocksUsed()).isZero();
      assertThat(runner.next(List.of(c.stream))).containsExactly(ChunkStep.END);
    }
  }
}
