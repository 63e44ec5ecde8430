package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.TextModels;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Prints the decoder's speed on this machine (not asserted: the numbers depend on the host and its load). */
class ThroughputTest {

  private static final int TOKENS = 128;
  private static final int TRIES = 3;

  private record Timing(double seconds, long tokens, long steps, long modelNanos) {
  }

  private static Timing time(DecoderRunner runner, int streams, int round) {
    List<InferenceRequest> requests = new ArrayList<>();
    List<Reference> prompts = Reference.prompts();
    for (int i = 0; i < streams; i++) {
      // Distinct prompts every round: no prefix-cache hits.
      requests.add(TestModels.request(round + "." + i + ": " + prompts.get(i % prompts.size()).text(),
          TextModels.TEMPERATURE, 0L, TextModels.MAX_TOKENS, (long) TOKENS, TextModels.IGNORE_EOS, true));
    }
    long steps = runner.stats().steps();
    long model = runner.modelRunNanos();
    long start = System.nanoTime();
    List<Result> results = TestModels.runAll(runner, requests);
    double seconds = (System.nanoTime() - start) / 1e9;
    assertThat(results).allSatisfy(r -> assertThat(r.completionTokens()).isEqualTo(TOKENS));
    return new Timing(seconds, (long) streams * TOKENS, runner.stats().steps() - steps,
        runner.modelRunNanos() - model);
  }

  private static void report(DecoderRunner runner, String label, int streams) {
    Timing best = null;
    for (int i = 0; i < TRIES; i++) {
      Timing t = time(runner, streams, i);
      best = best == null || t.seconds() < best.seconds() ? t : best;
    }
    System.out.printf(Locale.ROOT, "%s: %d x %d tokens in %.3f s (best of %d): %.0f tokens/s, %d steps,"
            + " %.2f ms/step (%.2f ms in ONNX Runtime)%n", label, streams, TOKENS, best.seconds(), TRIES,
        best.tokens() / best.seconds(), best.steps(), best.seconds() * 1000 / best.steps(),
        best.modelNanos() / 1e6 / best.steps());
  }

  @Test
  void tokensPerSecond() {
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      time(runner, 8, -1); // the JIT's turn
      report(runner, "single greedy stream", 1);
      report(runner, "8 concurrent greedy streams", 8);
      prefill(runner);
    }
  }

  /** A 480-token prompt: two prefill steps of max_batched_tokens (256 and 224). */
  private static void prefill(DecoderRunner runner) {
    double best = Double.MAX_VALUE;
    long steps = 0;
    for (int i = 0; i < TRIES; i++) {
      long before = runner.stats().steps();
      long start = System.nanoTime();
      Result r = TestModels.runOne(runner, TestModels.request(i + " tick".repeat(479), TextModels.MAX_TOKENS, 1L));
      double seconds = (System.nanoTime() - start) / 1e9;
      assertThat(r.promptTokens()).isEqualTo(480);
      steps = runner.stats().steps() - before;
      best = Math.min(best, seconds);
    }
    System.out.printf(Locale.ROOT, "prefill: 480 prompt tokens in %.3f s (best of %d): %.0f tokens/s, %d steps,"
        + " %.1f ms/step%n", best, TRIES, 480 / best, steps, best * 1000 / steps);
  }
}
