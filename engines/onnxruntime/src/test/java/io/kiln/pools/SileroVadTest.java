package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #36, item 1, with the model users met it with: Silero VAD v5 (models/vad/fetch.sh), whose {@code sr} is an
 * INT64 scalar and whose {@code state} is batched on its second dimension ([2, batch, 128]: declared with its first
 * dimension fixed, so passed whole). Kiln's answers equal ONNX Runtime's own session's, alone, chunk after chunk,
 * through a pool reached from another node, and in a pool that may batch, where requests at 16 kHz and 8 kHz arrive
 * together.
 */
@Tag("slow")
class SileroVadTest {

  private static final double TOLERANCE = 1e-5;
  private static ModelSpec spec;
  private static ModelRunner runner;
  private static OrtEnvironment env;
  private static OrtSession direct;

  @BeforeAll
  static void load() throws OrtException {
    spec = ProjectModels.sileroVad().build();
    runner = ModelRunners.load(spec, List.of());
    env = OrtEnvironment.getEnvironment();
    direct = env.createSession(spec.uri().resolve("model.onnx").toString(), new OrtSession.SessionOptions());
  }

  @AfterAll
  static void close() throws OrtException {
    if (runner != null) {
      runner.close();
      direct.close();
    }
  }

  /** {@code samples} of a {@code hertz} sine at {@code rate}, amplitude 0.5 (Silero takes audio in [-1, 1]). */
  static float[] sine(double hertz, int rate, int samples) {
    float[] out = new float[samples];
    for (int i = 0; i < samples; i++) {
      out[i] = (float) (0.5 * Math.sin(2 * Math.PI * hertz * i / rate));
    }
    return out;
  }

  static InferenceRequest chunk(float[] audio, float[] state, long sr) {
    Tensor rate = new Tensor("sr", DataType.INT64, new long[0],
        ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(sr).array());
    return InferenceRequest.of(Tensor.ofFloats("input", new long[] {1, audio.length}, audio),
        Tensor.ofFloats("state", new long[] {2, 1, 128}, state), rate);
  }

  /** ONNX Runtime's own answer: {speech probability, next state}. */
  static float[][] directly(float[] audio, float[] state, long sr) throws OrtException {
    try (OnnxTensor in = OnnxTensor.createTensor(env, FloatBuffer.wrap(audio), new long[] {1, audio.length});
         OnnxTensor st = OnnxTensor.createTensor(env, FloatBuffer.wrap(state), new long[] {2, 1, 128});
         OnnxTensor rate = OnnxTensor.createTensor(env, LongBuffer.wrap(new long[] {sr}), new long[0]);
         OrtSession.Result r = direct.run(Map.of("input", in, "state", st, "sr", rate))) {
      float[] p = new float[1];
      ((OnnxTensor) r.get("output").orElseThrow()).getFloatBuffer().get(p);
      float[] next = new float[256];
      ((OnnxTensor) r.get("stateN").orElseThrow()).getFloatBuffer().get(next);
      return new float[][] {p, next};
    }
  }

  static void assertSameAsDirect(List<Tensor> out, float[] audio, float[] state, long sr) throws OrtException {
    float[][] want = directly(audio, state, sr);
    assertThat(out).hasSize(2);
    assertThat(out.get(0).name()).isEqualTo("output");
    assertThat(out.get(0).shape()).containsExactly(1, 1);
    assertThat(out.get(0).asFloats()[0]).isBetween(0f, 1f).isCloseTo(want[0][0], within((float) TOLERANCE));
    assertThat(out.get(1).name()).isEqualTo("stateN");
    assertThat(out.get(1).shape()).containsExactly(2, 1, 128);
    float[] next = out.get(1).asFloats();
    for (int i = 0; i < next.length; i++) {
      assertThat((double) next[i]).as("stateN element %d", i).isCloseTo(want[1][i], within(TOLERANCE));
    }
  }

  @Test
  void aChunkOfA440HzSineWithAZeroStateAndSr16000GivesWhatOnnxRuntimeGives() throws OrtException {
    float[] audio = sine(440, 16_000, 512);
    float[] zero = new float[256];

    List<Tensor> out = runner.infer(List.of(chunk(audio, zero, 16_000))).get(0);

    assertSameAsDirect(out, audio, zero, 16_000);
    // The next chunk carries the state on, as a streaming client does.
    float[] state = out.get(1).asFloats();
    float[] more = sine(440, 16_000, 1024);
    float[] second = java.util.Arrays.copyOfRange(more, 512, 1024);
    assertSameAsDirect(runner.infer(List.of(chunk(second, state, 16_000))).get(0), second, state, 16_000);
  }

  @Test
  void aWarmupSampleGivesItsScalarBareOrAsAOneElementArray(@TempDir Path dir) throws Exception {
    Path model = Files.createDirectories(dir.resolve("silero").resolve("warmup")).getParent();
    Files.copy(spec.uri().resolve("model.onnx"), model.resolve("model.onnx"));
    String audio = java.util.Arrays.toString(sine(440, 16_000, 512));
    String state = "{\"name\": \"state\", \"datatype\": \"FP32\", \"shape\": [2, 1, 128], \"data\": "
        + java.util.Arrays.toString(new float[256]) + "}";
    for (String sr : List.of("16000", "[16000]")) {
      Files.writeString(model.resolve("warmup/sr" + sr.length() + ".json"), "{\"inputs\": [{\"name\": \"input\","
          + " \"datatype\": \"FP32\", \"shape\": [1, 512], \"data\": " + audio + "}, " + state + ", {\"name\":"
          + " \"sr\", \"datatype\": \"INT64\", \"shape\": [], \"data\": " + sr + "}]}");
    }

    try (ModelRunner warmed = ModelRunners.load(spec.toBuilder().uri(model).build(), List.of())) {
      assertThat(warmed.loadInfo().warmupSamples()).containsExactly("warmup/sr5.json", "warmup/sr7.json");
      assertThat(warmed.loadInfo().warmupProblems()).isEmpty();
      assertThat(warmed.loadInfo().warmupIterations()).isPositive();
    }
  }

  @Test
  void throughAPoolOnAnotherNodeWithMaxBatchSizeOne() throws OrtException {
    try (PoolNodes nodes = new PoolNodes("a", "b")) {
      nodes.start(spec("vad", "a", spec, PoolConfig.builder().maxBatchSize(1).build(), 1, 0), 1);
      PoolClient client = new PoolClient(nodes.node("b"));
      float[] audio = sine(440, 16_000, 512);
      float[] zero = new float[256];

      InferenceResponse answer = result(client.infer(RequestContext.within("vad-1", 30_000), "vad", "1", "a",
          chunk(audio, zero, 16_000)), PoolNodes.WAIT);

      assertSameAsDirect(answer.outputs(), audio, zero, 16_000);
    }
  }

  @Test
  void aPoolThatMayBatchKeepsRequestsOfDifferentRatesAndStatesApart() throws OrtException {
    try (PoolNodes nodes = new PoolNodes("a")) {
      var m = nodes.start(spec("vad", "a", spec, PoolConfig.builder().maxBatchSize(8)
          .maxBatchDelay(Duration.ofMillis(20)).build(), 1, 0), 1);
      List<float[][]> sent = new ArrayList<>();
      List<CompletableFuture<InferenceResponse>> answers = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        long sr = i % 2 == 0 ? 16_000 : 8_000;
        float[] audio = sine(220 + 110 * i, (int) sr, sr == 16_000 ? 512 : 256);
        float[] state = new float[256];
        java.util.Arrays.fill(state, i * 0.01f);
        sent.add(new float[][] {audio, state, {sr}});
        answers.add(m.callAsync(PoolManager::infer, chunk(audio, state, sr), 30_000L).toCompletableFuture());
      }
      for (int i = 0; i < answers.size(); i++) {
        float[][] s = sent.get(i);
        assertSameAsDirect(result(answers.get(i), PoolNodes.WAIT).outputs(), s[0], s[1], (long) s[2][0]);
      }
    }
  }
}
