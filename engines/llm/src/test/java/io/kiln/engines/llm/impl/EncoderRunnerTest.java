package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The real (quantised) all-MiniLM-L6-v2: its vectors, their similarities, and their independence from the batch. */
class EncoderRunnerTest {

  private static EncoderRunner runner;

  @BeforeAll
  static void load() {
    runner = EncoderRunner.load(ModelSpec.builder().uri(TestModels.miniLm()).engine("Encoder").build(), List.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  static InferenceRequest texts(String... texts) {
    return new InferenceRequest("", List.of(Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {texts.length},
        Arrays.stream(texts).map(t -> t.getBytes(StandardCharsets.UTF_8)).toList())), List.of(), Map.of());
  }

  private static float[][] embed(EncoderRunner r, String... texts) {
    Tensor t = r.infer(List.of(texts(texts))).get(0).get(0);
    assertThat(t.name()).isEqualTo(TextModels.EMBEDDING);
    assertThat(t.shape()).containsExactly(texts.length, 384);
    float[] flat = t.asFloats();
    float[][] out = new float[texts.length][];
    for (int i = 0; i < texts.length; i++) {
      out[i] = Arrays.copyOfRange(flat, i * 384, (i + 1) * 384);
    }
    return out;
  }

  private static double dot(float[] a, float[] b) {
    double d = 0;
    for (int i = 0; i < a.length; i++) {
      d += a[i] * b[i];
    }
    return d;
  }

  private static double maxDiff(float[] a, float[] b) {
    double m = 0;
    for (int i = 0; i < a.length; i++) {
      m = Math.max(m, Math.abs(a[i] - b[i]));
    }
    return m;
  }

  @Test
  void vectorsAreUnitLengthAndSimilarTextsCloser() {
    float[][] v = embed(runner, "A man is eating food.", "A man is eating a piece of bread.",
        "The girl is carrying a baby.");
    for (float[] e : v) {
      assertThat(Math.sqrt(dot(e, e))).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-5));
    }
    assertThat(dot(v[0], v[1])).isGreaterThan(dot(v[0], v[2]));
    assertThat(runner.dimension()).isEqualTo(384);
  }

  @Test
  void aTextsVectorIsTheSameAloneAndInAPaddedBatch() {
    float[] alone = embed(runner, "A man is eating food.")[0];
    float[][] batch = embed(runner, "A man is eating food.",
        "A much longer sentence, which pads the batch, about a man who ate a great deal of food at a long dinner.");
    assertThat(maxDiff(alone, batch[0])).isLessThan(1e-4);
    // Two requests of one batch, several rows each, keep their rows apart.
    List<List<Tensor>> two = runner.infer(List.of(texts("A man is eating food.", "x"), texts("y")));
    assertThat(two.get(0).get(0).shape()).containsExactly(2, 384);
    assertThat(two.get(1).get(0).shape()).containsExactly(1, 384);
    assertThat(maxDiff(alone, Arrays.copyOfRange(two.get(0).get(0).asFloats(), 0, 384))).isLessThan(1e-4);
    assertThat(two.get(0).get(1).name()).isEqualTo(TextModels.PROMPT_TOKENS);
  }

  @Test
  void vectorsAndTokensMatchTheReference() {
    JsonNode ref = TestModels.reference(TestModels.miniLm());
    for (JsonNode s : ref.path("sentences")) {
      List<List<Tensor>> out = runner.infer(List.of(texts(s.path("text").asText())));
      float[] v = out.get(0).get(0).asFloats();
      float[] want = new float[384];
      for (int i = 0; i < 384; i++) {
        want[i] = (float) s.path("embedding").get(i).asDouble();
      }
      // ONNX Runtime's fused quantised kernels differ from the spec-exact reference by up to ~2e-3 a component.
      assertThat(dot(v, want)).as(s.path("text").asText()).isGreaterThan(0.9999);
      assertThat(maxDiff(v, want)).isLessThan(5e-3);
      assertThat(TestModels.int32(out.get(0).get(1))).isEqualTo(s.path("input_ids").size());
    }
  }

  @Test
  void thePaddedPathOfABatchIndependentModel() {
    // Force one padded run per batch, as for a float model; the quantised one then drifts a little between
    // batches, but each text keeps its own rows, unit length and a vector close to its own.
    runner.isolatedForTest(false);
    try {
      float[] alone = embed(runner, "A man is eating food.")[0];
      float[][] batch = embed(runner, "A man is eating food.", "A man is eating food.",
          "A much longer sentence, which pads the batch, about a man who ate a great deal of food.");
      assertThat(maxDiff(batch[0], batch[1])).isZero();
      assertThat(dot(alone, batch[0])).isGreaterThan(0.98);
      assertThat(Math.sqrt(dot(batch[2], batch[2]))).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-5));
    } finally {
      runner.isolatedForTest(true);
    }
  }

  @Test
  void truncatesToMaxLengthAndRefusesNonText() {
    try (EncoderRunner short8 = EncoderRunner.load(ModelSpec.builder().uri(TestModels.miniLm()).engine("Encoder")
        .options(Map.of("max_length", "8")).build(), List.of())) {
      List<List<Tensor>> out = short8.infer(List.of(texts("one two three four five six seven eight nine ten")));
      assertThat(TestModels.int32(out.get(0).get(1))).isEqualTo(8);
    }
    InferenceRequest floats = new InferenceRequest("", List.of(Tensor.ofFloats(TextModels.TEXT_INPUT,
        new long[] {1}, new float[] {1})), List.of(), Map.of());
    assertThatThrownBy(() -> runner.infer(List.of(floats))).isInstanceOfSatisfying(InferenceException.class,
        e -> assertThat(e.getMessage()).startsWith("text_input: "));
  }

  @Test
  void kilnsLoaderWarmsItWithEmptyTexts() {
    ModelSpec spec = ModelSpec.builder().uri(TestModels.miniLm()).engine("Encoder").warmupBatchSizes(1, 4).build();
    try (ModelRunner loaded = ModelRunners.load(spec, List.of())) {
      assertThat(loaded.loadInfo().warmupIterations()).isPositive();
      assertThat(loaded.memoryBytes()).isPresent();
    }
  }
}
