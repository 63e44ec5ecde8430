package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DecoderMetersTest {

  @Test
  void metersFollowTheRunnerAndLeaveWithIt() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    DecoderRunner runner = TestModels.decoder(Map.of());
    runner.bindMeters(registry, Tags.of("deployment", "tiny"));
    List<Reference> prompts = Reference.prompts();
    TestModels.runOne(runner, prompts.get(2).greedy());
    TestModels.runOne(runner, prompts.get(2).greedy());
    assertThat(registry.get("kiln.decoder.tokens").tags("kind", "generation", "deployment", "tiny")
        .functionCounter().count()).isEqualTo(32);
    assertThat(registry.get("kiln.decoder.tokens").tag("kind", "prompt").functionCounter().count()).isEqualTo(76);
    assertThat(registry.get("kiln.decoder.prefix.cache.hit.tokens").functionCounter().count()).isEqualTo(32);
    // Each admission looks its whole sequence up: two 38-token prompts, the second finding its first 2 blocks.
    assertThat(registry.get("kiln.decoder.prefix.cache.lookup.tokens").functionCounter().count()).isEqualTo(76);
    assertThat(registry.get("kiln.decoder.kv.cache.usage.ratio").gauge().value()).isZero();
    assertThat(registry.get("kiln.decoder.kv.blocks").tag("state", "used").gauge().value()).isZero();
    assertThat(registry.get("kiln.decoder.kv.blocks").tag("state", "available").gauge().value()).isEqualTo(512);
    assertThat(registry.get("kiln.decoder.kv.blocks.cached").gauge().value()).isPositive();
    assertThat(registry.get("kiln.decoder.sequences").tag("state", "running").gauge().value()).isZero();
    runner.close();
    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void gaugesShowRunningWaitingAndKvUseWhileStreamsRun() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    // 4 blocks of 16 tokens: a 38-token prompt takes 3, so a second one waits until the first is done.
    DecoderRunner runner = TestModels.decoder(Map.of("kv_cache_tokens", "64", "block_size", "16",
        "prefix_cache", "false"));
    try {
      runner.bindMeters(registry, Tags.of("deployment", "tiny"));
      Reference p = Reference.prompts().get(2);
      List<TestModels.Collected> all = List.of(TestModels.open(runner, p.greedy()),
          TestModels.open(runner, p.greedy()));
      TestModels.step(runner, all);
      assertThat(registry.get("kiln.decoder.sequences").tag("state", "running").gauge().value()).isEqualTo(1);
      assertThat(registry.get("kiln.decoder.sequences").tag("state", "waiting").gauge().value()).isEqualTo(1);
      assertThat(registry.get("kiln.decoder.kv.cache.usage.ratio").gauge().value()).isEqualTo(3 / 4.0);
      while (TestModels.step(runner, all)) {
        // to the end of both
      }
      assertThat(registry.get("kiln.decoder.sequences").tag("state", "running").gauge().value()).isZero();
      assertThat(registry.get("kiln.decoder.sequences").tag("state", "waiting").gauge().value()).isZero();
      assertThat(registry.get("kiln.decoder.kv.cache.usage.ratio").gauge().value()).isZero();
      assertThat(registry.get("kiln.decoder.prefix.cache.lookup.tokens").functionCounter().count())
          .as("nothing is looked up with the prefix cache off").isZero();
    } finally {
      runner.close();
    }
  }
}
