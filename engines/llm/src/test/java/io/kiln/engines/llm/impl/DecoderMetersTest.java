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
    assertThat(registry.get("kiln.decoder.kv.blocks").tag("state", "used").gauge().value()).isZero();
    assertThat(registry.get("kiln.decoder.kv.blocks").tag("state", "available").gauge().value()).isEqualTo(512);
    assertThat(registry.get("kiln.decoder.kv.blocks.cached").gauge().value()).isPositive();
    assertThat(registry.get("kiln.decoder.sequences").tag("state", "running").gauge().value()).isZero();
    runner.close();
    assertThat(registry.getMeters()).isEmpty();
  }
}
