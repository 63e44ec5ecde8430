package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.StreamingModelRunner;
import io.kiln.pools.TextModels;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The in-process limit on the real Decoder engine and tiny-gpt ({@code models/llm/fetch.sh} builds it). */
class LlmInProcessTest {

  private static Path tinyGpt() {
    Path root = Path.of("").toAbsolutePath();
    while (root != null && !Files.isDirectory(root.resolve("models/llm"))) {
      root = root.getParent();
    }
    Path dir = (root == null ? Path.of("models/llm") : root.resolve("models/llm")).resolve("tiny-gpt");
    assertThat(dir.resolve("model.onnx")).as("run models/llm/fetch.sh: %s is missing", dir).exists();
    return dir;
  }

  @Test
  void requestsAreTheWorkloadsPromptsWithTheParametersTheGatewayGivesTheModel() {
    LlmWorkload w = LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "m", 10, 4).withPrefixes(2, 6);
    for (long i = 0; i < 5; i++) {
      InferenceRequest r = LlmInProcess.request(w, i);
      assertThat(new String(r.inputs().get(0).byteElements().get(0), StandardCharsets.UTF_8))
          .isEqualTo(w.completionPrompt(i));
      assertThat(r.inputs().get(0).name()).isEqualTo(TextModels.TEXT_INPUT);
      assertThat(r.parameters()).isEqualTo(Map.of(TextModels.MAX_TOKENS, 4L, TextModels.IGNORE_EOS, true));
    }
  }

  @Test
  void closedLoopStreamsOnTheRealEngineCountEveryTokenOfTheRequestsOpenedAfterTheWarmUp() throws Exception {
    ModelSpec spec = ModelSpec.builder().uri(tinyGpt()).engine("Decoder").intraOpThreads(1).interOpThreads(1)
        .options(LlmInProcess.options("max_batched_tokens=64,kv_cache_tokens=2048")).build();
    LlmWorkload w = LlmWorkload.of(LlmWorkload.Api.COMPLETIONS, "in-process", 12, 6);
    ModelRunner loaded = ModelRunners.load(spec, List.of());
    try (StreamingModelRunner runner = (StreamingModelRunner) loaded) {
      LlmInProcess.Result r = LlmInProcess.drive(runner, w, "t", 3, 2, Duration.ofMillis(200), Duration.ofMillis(800),
          System::nanoTime);
      assertThat(r.errors()).isZero();
      assertThat(r.requests()).isPositive();
      assertThat(r.outputTokens()).isEqualTo(6 * r.requests()); // ignore_eos: exactly max_tokens each
      assertThat(r.ttftP50Ms()).isPositive();
      assertThat(r.outputTokensPerSecond()).isEqualTo(r.outputTokens() / r.seconds());
      assertThat(r.seconds()).isGreaterThan(0.0);
      // The stepping thread cannot have used more CPU than the wall-clock span allowed (plus timer granularity).
      assertThat(r.cpuSeconds()).isPositive().isLessThanOrEqualTo(r.seconds() + 0.05);
      assertThat(r.outputTokensPerCpuSecond()).isEqualTo(r.outputTokens() / r.cpuSeconds());
      // At most 2 of the 3 clients in a step: 6 tokens each, so at least 3 steps per 2 requests.
      assertThat(r.steps()).isGreaterThanOrEqualTo(3 * r.requests() / 2);
    }
  }

  @Test
  void theCommandLineWritesTheSummaryAndRefusesABadOption(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("inproc.json");
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    int code = LlmInProcess.run(new String[] {"--model-dir", tinyGpt().toString(), "--streams", "2",
        "--option", "max_batched_tokens=64,kv_cache_tokens=2048", "--prompt-words", "8", "--output-tokens", "4",
        "--warmup", "100ms", "--duration", "500ms", "--out", out.toString()},
        new PrintStream(text, true, StandardCharsets.UTF_8), System.err);
    assertThat(code).as(text.toString(StandardCharsets.UTF_8)).isZero();
    assertThat(text.toString(StandardCharsets.UTF_8)).contains("inprocess-c2: 2 streams").contains("tokens/s");
    var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.toFile());
    assertThat(json.path("errors").asLong(-1)).isZero();
    assertThat(json.path("llm").path("outputTokensPerSecond").asDouble()).isPositive();
    assertThat(json.path("llm").path("ttftMs").path("p50").asDouble()).isPositive();

    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertThat(LlmInProcess.run(new String[] {"--option", "max_batched_tokens"}, System.out,
        new PrintStream(err, true, StandardCharsets.UTF_8))).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("--option: NAME=VALUE expected");
  }
}
