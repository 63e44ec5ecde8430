package io.kiln.loadtest.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.loadtest.RunResult;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A streamed answer's events read into timings and an outcome; the statistics over many of them. */
class LlmStreamTest {

  private static final long MS = 1_000_000L;

  private static String completion(String text) {
    return "{\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + text
        + "\",\"finish_reason\":null}],\"usage\":null}";
  }

  @Test
  void completionsChunksAreTimedAndTheUsageChunkGivesTheTokens() {
    LlmStream s = new LlmStream();
    s.onEvent(completion("Once"), 50 * MS);
    s.onEvent(completion(""), 55 * MS); // no text: not a token
    s.onEvent(completion(" upon"), 60 * MS);
    s.onEvent(completion(" a time"), 75 * MS);
    s.onEvent("{\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":4,\"total_tokens\":8}}", 76 * MS);
    s.onEvent("[DONE]", 77 * MS);
    Outcome o = s.outcome();
    assertThat(o.key()).isEqualTo("http:200");
    assertThat(o.ok()).isTrue();
    assertThat(o.llm().firstTokenNs()).isEqualTo(50 * MS);
    assertThat(o.llm().gapsNs()).containsExactly(10 * MS, 15 * MS);
    assertThat(o.llm().chunks()).isEqualTo(3);
    assertThat(o.llm().outputTokens()).isEqualTo(4); // usage wins: " a time" was two tokens
  }

  @Test
  void chatDeltasCountAndWithoutUsageTheChunksAreTheTokens() {
    LlmStream s = new LlmStream();
    s.onEvent("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}", 1 * MS);
    s.onEvent("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}", 20 * MS);
    s.onEvent("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo!\"}}]}", 32 * MS);
    s.onEvent("{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}", 33 * MS);
    s.onEvent("[DONE]", 34 * MS);
    LlmTimings t = s.outcome().llm();
    assertThat(t.firstTokenNs()).isEqualTo(20 * MS);
    assertThat(t.gapsNs()).containsExactly(12 * MS);
    assertThat(t.outputTokens()).isEqualTo(2);
  }

  @Test
  void anErrorEventOrAMissingDoneIsAFailedStream() {
    LlmStream failed = new LlmStream();
    failed.onEvent(completion("a"), MS);
    failed.onEvent("{\"error\":{\"message\":\"pool 3 stopped\",\"type\":\"server_error\",\"code\":null}}", 2 * MS);
    failed.onEvent("[DONE]", 3 * MS); // after the error: ignored
    assertThat(failed.outcome().key()).isEqualTo("stream_error");
    assertThat(failed.outcome().ok()).isFalse();
    assertThat(failed.outcome().example()).isEqualTo("error event: pool N stopped");
    assertThat(failed.outcome().llm()).isNull();

    LlmStream cut = new LlmStream();
    cut.onEvent(completion("a"), MS);
    assertThat(cut.outcome().key()).isEqualTo("stream_incomplete");
    assertThat(cut.outcome().ok()).isFalse();

    LlmStream garbage = new LlmStream();
    garbage.onEvent("{not json", MS);
    garbage.onEvent("[DONE]", MS);
    assertThat(garbage.outcome().key()).isEqualTo("stream_error");
  }

  @Test
  void statisticsFromTheRequestsStartAndOverEveryGap() {
    LlmStats stats = new LlmStats();
    for (int i = 0; i < 100; i++) {
      long start = i * 1000 * MS;
      // TTFT 50 ms + i/10 ms; 9 gaps of 10 ms; 10 tokens; ends 5 ms after the last token
      long first = start + 50 * MS + i * MS / 10;
      long[] gaps = new long[9];
      java.util.Arrays.fill(gaps, 10 * MS);
      stats.record(new LlmTimings(first, gaps, 10, 10), start, first + 95 * MS);
    }
    RunResult.Llm s = stats.summary("completions", 10, 10);
    assertThat(s.requests()).isEqualTo(100);
    assertThat(s.outputTokens()).isEqualTo(1000);
    assertThat(s.meanOutputTokens()).isEqualTo(10);
    assertThat(s.outputTokensPerSecond()).isEqualTo(100);
    assertThat(s.ttftMs().count()).isEqualTo(100);
    assertThat(s.ttftMs().p50()).isBetween(54.8, 55.1);
    assertThat(s.ttftMs().p99()).isBetween(59.7, 60.0);
    assertThat(s.itlMs().count()).isEqualTo(900);
    assertThat(s.itlMs().p50()).isBetween(10.0, 10.01); // 3 significant digits
    assertThat(s.itlMs().p99()).isBetween(10.0, 10.01);
    assertThat(s.e2eMs().p50()).isBetween(149.8, 150.1);

    LlmStats none = new LlmStats();
    none.record(new LlmTimings(0, new long[0], 0, 0), 0, 5 * MS); // a stream with no text: no TTFT
    assertThat(none.summary("chat", 1, 1).ttftMs().count()).isZero();
    assertThat(none.summary("chat", 1, 1).e2eMs().count()).isEqualTo(1);
  }
}
