package io.kiln.pools.testsupport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The models shipped in the repository's {@code models/} folder, their specs and fixtures, for tests. */
public final class ProjectModels {

  private ProjectModels() {
  }

  /** The repository's {@code models/} folder, found from the working directory upwards. */
  public static Path modelsDir() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("models").resolve("mlp"))) {
        return p.resolve("models");
      }
    }
    throw new IllegalStateException("no models/mlp above " + Path.of("").toAbsolutePath());
  }

  /** The TorchScript MLP: input {@code input} FP32 [-1, 64], output {@code output} FP32 [-1, 10]. */
  public static ModelSpec.Builder mlp() {
    return ModelSpec.builder().uri(modelsDir().resolve("mlp"))
        .input("input", DataType.FP32, -1, 64)
        .output("output", DataType.FP32, -1, 10);
  }

  /** The same MLP (same weights) as an ONNX graph, for ONNX Runtime. */
  public static ModelSpec.Builder mlpOnnx() {
    return ModelSpec.builder().uri(modelsDir().resolve("mlp-onnx")).engine(ModelSpec.ENGINE_ONNX)
        .input("input", DataType.FP32, -1, 64)
        .output("output", DataType.FP32, -1, 10);
  }

  /**
   * The same MLP shape built in DJL and saved as {@code .params} (the spec kiln-engine-pytorch's
   * {@code BuildModels.mlpSpec} gives; written out here so that this test jar needs no engine).
   */
  public static ModelSpec.Builder mlpDjl() {
    return ModelSpec.builder().uri(modelsDir().resolve("mlp-djl")).format(ModelSpec.FORMAT_DJL_PARAMS)
        .architecture("mlp")
        .input("input", DataType.FP32, -1, 64)
        .output("output", DataType.FP32, -1, 10);
  }

  /**
   * openWakeWord's melspectrogram front end, fetched by {@code models/wakeword/fetch.sh}: input {@code input} FP32
   * [-1, -1] (16 kHz audio, at least 512 samples a row), output {@code output} FP32 [-1, 1, -1, 32] (a row's 32 mel
   * bands per 10 ms frame). Without the file a test skips locally and fails under {@code CI=true}.
   */
  public static ModelSpec.Builder melspectrogram() {
    Path folder = fetched("wakeword", "melspectrogram", "openWakeWord's melspectrogram");
    return ModelSpec.builder().uri(folder).engine(ModelSpec.ENGINE_ONNX)
        .input("input", DataType.FP32, -1, -1)
        .output("output", DataType.FP32, -1, 1, -1, 32)
        .intraOpThreads(1).interOpThreads(1);
  }

  /**
   * Silero VAD v5, fetched by {@code models/vad/fetch.sh}, declared as the model takes it: {@code input} FP32
   * [-1, -1] (a chunk of 512 samples at 16 kHz a row), {@code state} FP32 [2, -1, 128] (batched on its second
   * dimension, so Kiln passes it whole), {@code sr} INT64 [] (a scalar); outputs {@code output} FP32 [-1, 1] (the
   * speech probability) and {@code stateN} FP32 [2, -1, 128]. Without the file a test skips locally and fails under
   * {@code CI=true}.
   */
  public static ModelSpec.Builder sileroVad() {
    Path folder = fetched("vad", "silero", "Silero VAD");
    return ModelSpec.builder().uri(folder).engine(ModelSpec.ENGINE_ONNX)
        .input("input", DataType.FP32, -1, -1).input("state", DataType.FP32, 2, -1, 128).input("sr", DataType.INT64)
        .output("output", DataType.FP32, -1, 1).output("stateN", DataType.FP32, 2, -1, 128)
        .intraOpThreads(1).interOpThreads(1);
  }

  /** {@code models/<set>/<name>}, holding a {@code model.onnx} that {@code models/<set>/fetch.sh} fetched. */
  private static Path fetched(String set, String name, String what) {
    Path folder = modelsDir().resolve(set).resolve(name);
    if (!Files.isRegularFile(folder.resolve("model.onnx"))) {
      String why = what + " is missing: run models/" + set + "/fetch.sh (./run-tests does)";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(why);
      }
      org.junit.jupiter.api.Assumptions.abort(why);
    }
    return folder;
  }

  /** {@code seconds} of a {@code hertz} sine at 16 kHz, at half of 16-bit full scale (openWakeWord's input scale). */
  public static float[] sine(double hertz, double seconds) {
    float[] samples = new float[(int) Math.round(16_000 * seconds)];
    for (int i = 0; i < samples.length; i++) {
      samples[i] = (float) (16_384 * Math.sin(2 * Math.PI * hertz * i / 16_000));
    }
    return samples;
  }

  /** The input recorded in a model folder's {@code expected.json}. */
  public static Tensor expectedInput(String model) {
    return tensor(readExpected(model).get("input"));
  }

  /** The output recorded in a model folder's {@code expected.json}. */
  public static Tensor expectedOutput(String model) {
    return tensor(readExpected(model).get("output"));
  }

  /** {@code rows} rows of 64 floats, distinct per {@code seed}, as an MLP request. */
  public static InferenceRequest mlpRequest(int rows, int seed) {
    float[] values = new float[rows * 64];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) Math.sin(0.37 * (i + 1) + seed);
    }
    return InferenceRequest.of(Tensor.ofFloats("input", new long[] {rows, 64}, values));
  }

  private static JsonNode readExpected(String model) {
    try {
      return new ObjectMapper().readTree(modelsDir().resolve(model).resolve("expected.json").toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Tensor tensor(JsonNode node) {
    long[] shape = new long[node.get("shape").size()];
    for (int i = 0; i < shape.length; i++) {
      shape[i] = node.get("shape").get(i).asLong();
    }
    float[] values = new float[node.get("data").size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) node.get("data").get(i).asDouble();
    }
    return Tensor.ofFloats(node.get("name").asText(), shape, values);
  }
}
