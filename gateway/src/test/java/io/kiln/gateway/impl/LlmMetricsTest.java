package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What one generation's chunks make of the LLM meters, on times given by the test (the clock is the caller's). */
class LlmMetricsTest {

  private static final long MS = 1_000_000;

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final LlmMetrics metrics = new LlmMetrics(registry);

  /** A decoder's chunk: its text, finish reason ("" but on the last), and the usage so far. */
  private static InferenceResponse chunk(String text, String finish, int prompt, int completion, boolean usage) {
    List<Tensor> outputs = new ArrayList<>();
    outputs.add(Tensor.ofBytes(TextModels.TEXT_OUTPUT, new long[] {1}, List.of(text.getBytes(StandardCharsets.UTF_8))));
    outputs.add(Tensor.ofBytes(TextModels.FINISH_REASON, new long[] {1},
        List.of(finish.getBytes(StandardCharsets.UTF_8))));
    if (usage) {
      outputs.add(int32(TextModels.PROMPT_TOKENS, prompt));
      outputs.add(int32(TextModels.COMPLETION_TOKENS, completion));
    }
    return new InferenceResponse("r", "m", "1", outputs, Map.of());
  }

  private static Tensor int32(String name, int v) {
    return new Tensor(name, DataType.INT32, new long[] {1},
        ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
  }

  private double count(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  @Test
  void firstTokenGapsEndAndUsageFollowTheChunks() {
    LlmMetrics.Generation g = metrics.start("chat", 1000 * MS);
    g.chunk(chunk("Hel", "", 7, 1, true), 1040 * MS);
    g.chunk(chunk("lo", "", 7, 2, true), 1050 * MS);
    g.chunk(chunk("", "", 7, 3, true), 1070 * MS); // a token with no text yet (half a character) is a token
    g.chunk(chunk("!", TextModels.FINISH_LENGTH, 7, 4, true), 1075 * MS);
    g.end(null, 1080 * MS);

    var ttft = registry.get("kiln.llm.time.to.first.token").tag("model", "chat").timer();
    assertThat(ttft.count()).isEqualTo(1);
    assertThat(ttft.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(40);
    var itl = registry.get("kiln.llm.inter.token.latency").tag("model", "chat").timer();
    assertThat(itl.count()).isEqualTo(3);
    assertThat(itl.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(10 + 20 + 5);
    assertThat(itl.max(TimeUnit.MILLISECONDS)).isEqualTo(20);
    var e2e = registry.get("kiln.llm.e2e.request.latency").tag("model", "chat").timer();
    assertThat(e2e.count()).isEqualTo(1);
    assertThat(e2e.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(80);
    assertThat(count("kiln.llm.prompt.tokens", "model", "chat")).isEqualTo(7);
    assertThat(count("kiln.llm.generation.tokens", "model", "chat")).isEqualTo(4);
    assertThat(count("kiln.llm.requests", "model", "chat", "finish_reason", "length")).isEqualTo(1);
  }

  @Test
  void tokensCountAsTheyArriveAndEndsAreLabelledByHowTheyEnded() {
    LlmMetrics.Generation aborted = metrics.start("chat", 0);
    aborted.chunk(chunk("a", "", 5, 1, true), MS);
    aborted.chunk(chunk("b", "", 5, 2, true), 2 * MS);
    assertThat(count("kiln.llm.generation.tokens", "model", "chat")).as("before the end").isEqualTo(2);
    aborted.end(LlmMetrics.ABORT, 3 * MS);

    LlmMetrics.Generation failed = metrics.start("chat", 0);
    failed.end(LlmMetrics.ERROR, 4 * MS); // failed before any token: an end, no first token

    LlmMetrics.Generation noUsage = metrics.start("chat", 0); // a model whose chunks carry no usage: one per chunk
    noUsage.chunk(chunk("x", "", 0, 0, false), MS);
    noUsage.chunk(chunk("y", "because", 0, 0, false), 2 * MS);
    noUsage.end(null, 3 * MS);

    assertThat(count("kiln.llm.requests", "model", "chat", "finish_reason", "abort")).isEqualTo(1);
    assertThat(count("kiln.llm.requests", "model", "chat", "finish_reason", "error")).isEqualTo(1);
    assertThat(count("kiln.llm.requests", "model", "chat", "finish_reason", "other"))
        .as("a finish reason outside the known ones is not a label of its own").isEqualTo(1);
    assertThat(count("kiln.llm.generation.tokens", "model", "chat")).isEqualTo(4);
    assertThat(count("kiln.llm.prompt.tokens", "model", "chat")).isEqualTo(5);
    assertThat(registry.get("kiln.llm.time.to.first.token").timer().count()).isEqualTo(2);
    assertThat(registry.get("kiln.llm.e2e.request.latency").timer().count()).isEqualTo(3);
    assertThat(registry.get("kiln.llm.inter.token.latency").timer().count()).isEqualTo(2);
  }
}
