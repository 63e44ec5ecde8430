package io.kiln.pools;

import static io.kiln.pools.testsupport.PoolNodes.spec;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.pools.testsupport.PoolNodes;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.runtime.ActorHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #36, item 2, with the model a user met it with: openWakeWord's melspectrogram (ONNX, input [-1, -1], at least
 * 512 samples a row) rejects Kiln's synthetic warm-up of zeros [1, 1] ("Invalid input shape" from its Conv), and still
 * loads and serves, alone and as a pool's worker; a {@code warmup/} folder of OIP JSON requests warms it with real
 * audio instead, skipping a file that does not fit.
 */
@Tag("slow")
class WakeWordWarmupTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** One second of a 440 Hz sine at 16 kHz, as the request a client sends. */
  private static InferenceRequest oneSecondOfA440() {
    return InferenceRequest.of(Tensor.ofFloats("input", new long[] {1, 16_000}, ProjectModels.sine(440, 1)));
  }

  @Test
  void aModelThatRejectsTheSyntheticZerosLoadsServesAndSaysWhy() {
    try (ModelRunner runner = ModelRunners.load(ProjectModels.melspectrogram().build(), List.of())) {
      ModelLoadInfo info = runner.loadInfo();
      assertThat(info.warmupSamples()).as("no samples: synthetic zeros").isEmpty();
      assertThat(info.warmupIterations()).as("the zeros never ran").isZero();
      assertThat(info.warmupProblems()).singleElement().asString()
          .startsWith("warm-up batch of 1 request of synthetic zeros (input FP32[1, 1]) was rejected: ")
          .contains("the OnnxRuntime engine failed", "Invalid input shape");

      List<Tensor> out = runner.infer(List.of(oneSecondOfA440())).get(0);

      assertMelFrames(out, 1);
    }
  }

  @Test
  void samplesInItsWarmupFolderWarmItInsteadOfZeros(@TempDir Path dir) throws Exception {
    Path model = copyOfTheModel(dir);
    write(model.resolve("warmup/a440.json"), request(List.of(1, 16_000), flat(ProjectModels.sine(440, 1))));
    // The same protocol, nested to the shape: two rows of half a second.
    float[] half = ProjectModels.sine(880, 0.5);
    ArrayNode rows = JSON.createArrayNode();
    rows.add(flat(half)).add(flat(half));
    write(model.resolve("warmup/b880.json"), request(List.of(2, 8_000), rows));

    try (ModelRunner runner = ModelRunners.load(ProjectModels.melspectrogram().uri(model).warmupBatchSizes(1, 2).build(),
        List.of())) {
      ModelLoadInfo info = runner.loadInfo();
      assertThat(info.warmupSamples()).containsExactly("warmup/a440.json", "warmup/b880.json");
      assertThat(info.warmupProblems()).isEmpty();
      assertThat(info.warmupIterations()).as("each of 2 sizes x 2 samples at least once").isGreaterThanOrEqualTo(4);
      assertMelFrames(runner.infer(List.of(oneSecondOfA440())).get(0), 1);
    }
  }

  @Test
  void aSampleThatDoesNotFitIsSkippedWithItsReasonAndTheOthersWarmTheModel(@TempDir Path dir) throws Exception {
    Path model = copyOfTheModel(dir);
    write(model.resolve("warmup/good.json"), request(List.of(1, 16_000), flat(ProjectModels.sine(440, 1))));
    Files.writeString(model.resolve("warmup/fp64.json"), "{\"inputs\": [{\"name\": \"input\", \"datatype\": \"FP64\","
        + " \"shape\": [1, 2], \"data\": [0.5, 0.25]}]}");
    Files.writeString(model.resolve("warmup/broken.json"), "{\"inputs\": [{\"name\": \"input\",");
    // Fits the signature, but 100 samples are fewer than the model's 512: the model itself rejects it.
    write(model.resolve("warmup/short.json"), request(List.of(1, 100), flat(ProjectModels.sine(440, 100 / 16_000.0))));

    try (ModelRunner runner = ModelRunners.load(ProjectModels.melspectrogram().uri(model).build(), List.of())) {
      ModelLoadInfo info = runner.loadInfo();
      assertThat(info.warmupSamples()).containsExactly("warmup/good.json", "warmup/short.json");
      assertThat(info.warmupProblems()).satisfiesExactly(
          broken -> assertThat(broken).startsWith("warm-up sample warmup/broken.json skipped: not valid JSON: "),
          fp64 -> assertThat(fp64).isEqualTo("warm-up sample warmup/fp64.json skipped: inputs[0].datatype: input"
              + " 'input' is FP32, got FP64"),
          shortOne -> assertThat(shortOne).startsWith("warm-up batch of 1 request of warmup/short.json (input"
              + " FP32[1, 100]) was rejected: ").contains("Invalid input shape"));
      assertMelFrames(runner.infer(List.of(oneSecondOfA440())).get(0), 1);
    }
  }

  @Test
  void aPoolWorkerWhoseWarmUpIsRejectedBecomesReadyWithoutARestartAndServes() {
    ModelSpec model = ProjectModels.melspectrogram().build();
    try (PoolNodes nodes = new PoolNodes("a")) {
      // No restart allowed: a worker failed by its warm-up would never be READY.
      ActorHandle<PoolManager> m = nodes.start(spec("wakeword", "a", model, PoolConfig.builder().build(), 1, 0), 1);

      PoolStatus status = PoolNodes.awaitReady(m, 1);
      assertThat(status.workers()).singleElement().satisfies(w -> {
        assertThat(w.state()).isEqualTo(WorkerState.READY);
        assertThat(w.restarts()).isZero();
        assertThat(w.loadInfo().warmupProblems()).singleElement().asString().contains("synthetic zeros",
            "Invalid input shape");
      });
      InferenceResponse answer = result(m.callAsync(PoolManager::infer, oneSecondOfA440(), 60_000L), PoolNodes.WAIT);
      assertMelFrames(answer.outputs(), 1);
    }
  }

  /** 16,000 samples give 97 frames of 32 mel bands (25 ms windows every 10 ms), finite and not all alike. */
  private static void assertMelFrames(List<Tensor> out, int rows) {
    assertThat(out).singleElement().satisfies(t -> {
      assertThat(t.name()).isEqualTo("output");
      assertThat(t.shape()).containsExactly(rows, 1, 97, 32);
      float min = Float.POSITIVE_INFINITY;
      float max = Float.NEGATIVE_INFINITY;
      for (float x : t.asFloats()) {
        assertThat(Float.isFinite(x)).as("every band's value is finite").isTrue();
        min = Math.min(min, x);
        max = Math.max(max, x);
      }
      assertThat(max).as("a sine is not silence: its bands differ").isGreaterThan(min);
    });
  }

  private static Path copyOfTheModel(Path dir) throws Exception {
    Path model = Files.createDirectories(dir.resolve("melspectrogram").resolve("warmup")).getParent();
    Files.copy(ProjectModels.melspectrogram().build().uri().resolve("model.onnx"), model.resolve("model.onnx"));
    return model;
  }

  private static ObjectNode request(List<Integer> shape, ArrayNode data) {
    ObjectNode input = JSON.createObjectNode().put("name", "input").put("datatype", "FP32");
    input.set("shape", JSON.valueToTree(shape));
    input.set("data", data);
    ObjectNode request = JSON.createObjectNode();
    request.putArray("inputs").add(input);
    return request;
  }

  private static ArrayNode flat(float[] values) {
    ArrayNode a = JSON.createArrayNode();
    for (float v : values) {
      a.add(v);
    }
    return a;
  }

  private static void write(Path file, ObjectNode json) throws Exception {
    JSON.writeValue(file.toFile(), json);
  }
}
