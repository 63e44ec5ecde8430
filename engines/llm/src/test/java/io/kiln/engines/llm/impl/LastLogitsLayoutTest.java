package io.kiln.engines.llm.impl;

import static io.kiln.engines.llm.impl.JoinPlan.greedy;
import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import io.kiln.engines.llm.impl.JoinPlan.Planned;
import io.kiln.engines.llm.impl.TestModels.Collected;
import io.kiln.pools.ChunkStep;
import io.kiln.pools.TextModels;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The two logits layouts the decoder loads give the same tokens. {@code tiny-gpt} (Optimum's layout, logits at every
 * position) and {@code tiny-gpt-last} (the same weights exported with the LM head on each row's last real position,
 * {@code [batch, 1, vocab]}; both built by {@code models/llm/fetch.sh}) serve the same seeded mix of prompts joining
 * at random steps, with padded prefill runs of several prompts, chunked prefill and preemption: every stream's greedy
 * tokens must be equal, and the reference prompts' must be torch's. Also: a step in which a stream ends runs no model,
 * so the end leaves right after the stream's last chunk.
 */
class LastLogitsLayoutTest {


  @Test
  void theSignatureTellsTheLayoutsApart() throws Exception {
    assertThat(signature(TestModels.tinyGpt()).lastLogitsOnly()).isFalse();
    assertThat(signature(TestModels.folder("tiny-gpt-last")).lastLogitsOnly()).isTrue();
  }

  @Test
  void referencePromptsGiveTorchsTokensInBothLayouts() {
    List<Reference> refs = Reference.prompts();
    for (Path folder : List.of(TestModels.tinyGpt(), TestModels.folder("tiny-gpt-last"))) {
      try (DecoderRunner runner = DecoderLoader.load(TestModels.decoderSpec(folder, Map.of()), List.of())) {
        List<TestModels.Result> got = TestModels.runAll(runner, refs.stream().map(r -> r.greedy()).toList());
        for (int i = 0; i < refs.size(); i++) {
          assertThat(got.get(i).tokens()).as("%s: %s", folder.getFileName(), refs.get(i).text())
              .containsExactly(refs.get(i).greedyIds());
        }
      }
    }
  }

  @Test
  void joiningStreamsGiveIdenticalGreedyTokensInBothLayouts() {
    for (Map<String, String> options : List.of(Map.<String, String>of(),
        Map.of(DecoderOptions.MAX_BATCHED_TOKENS, "16"),
        Map.of(DecoderOptions.KV_CACHE_TOKENS, "256", DecoderOptions.BLOCK_SIZE, "16"))) {
      List<Planned> plan = JoinPlan.random(new Random(35), 40);
      List<int[]> full = run(TestModels.tinyGpt(), options, plan);
      List<int[]> last = run(TestModels.folder("tiny-gpt-last"), options, plan);
      int tokens = 0;
      for (int i = 0; i < plan.size(); i++) {
        assertThat(last.get(i)).as("options %s, stream %d (%s)", options, i, plan.get(i).prompt())
            .containsExactly(full.get(i));
        assertThat(full.get(i)).hasSize(plan.get(i).maxTokens());
        tokens += full.get(i).length;
      }
      assertThat(tokens).isGreaterThan(plan.size());
    }
  }

  @Test
  void aStepThatEndsAStreamRunsNoModelAndTheOthersMoveInTheNext() {
    try (DecoderRunner runner = DecoderLoader.load(TestModels.decoderSpec(TestModels.folder("tiny-gpt-last"),
        Map.of()), List.of())) {
      Collected shortOne = TestModels.open(runner, greedy("Hello, my name is", 2));
      Collected longOne = TestModels.open(runner, greedy("The quick brown fox", 6));
      List<Collected> both = List.of(shortOne, longOne);
      TestModels.step(runner, both); // prefill: each its first token
      TestModels.step(runner, both); // the short one's second and last token, with its finish reason
      assertThat(shortOne.result().finishReason()).isEqualTo(TextModels.FINISH_LENGTH);
      long runs = runner.stats().modelRuns();
      long steps = runner.stats().steps();
      List<ChunkStep> ending = runner.next(List.of(shortOne.stream, longOne.stream));
      assertThat(ending).containsExactly(ChunkStep.END, ChunkStep.PENDING);
      assertThat(runner.stats().modelRuns()).isEqualTo(runs);
      assertThat(runner.stats().steps()).isEqualTo(steps);
      shortOne.stream.close();
      List<ChunkStep> next = runner.next(List.of(longOne.stream));
      assertThat(next.get(0).pending()).isFalse();
      assertThat(next.get(0).over()).isFalse();
      assertThat(runner.stats().modelRuns()).isEqualTo(runs + 1);
    }
  }

  private static DecoderSignature signature(Path folder) throws Exception {
    try (OrtSession session = OrtEnvironment.getEnvironment().createSession(
        folder.resolve(ModelFolder.MODEL_FILE).toString(), new OrtSession.SessionOptions())) {
      return DecoderSignature.of(session, ModelFolder.open(folder, "Decoder"), folder.toString());
    }
  }



  /** Runs the plan as a worker steps it; each stream's generated tokens, in plan order. */
  private static List<int[]> run(Path folder, Map<String, String> options, List<Planned> plan) {
    try (DecoderRunner runner = DecoderLoader.load(TestModels.decoderSpec(folder, options), List.of())) {
      return JoinPlan.run(runner, plan);
    }
  }

}
