package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The engine-free built-ins, and through them the request checks, stacking and splitting that every
 * runner shares (a two-input spec with open dimensions reaches cases the MLP cannot).
 */
class BuiltinModelsTest {

  private static final String IDENTITY = "builtin:identity";

  /** Inputs {@code a}: FP32 [-1, -1] and {@code b}: INT64 [-1]; outputs {@code a_out}, {@code b_out}. */
  private static ModelSpec twoInputs(String uri) {
    return ModelSpec.builder().uri(uri).engine(ModelSpec.ENGINE_BUILTIN)
        .input("a", DataType.FP32, -1, -1)
        .input("b", DataType.INT64, -1)
        .output("a_out", DataType.FP32, -1, -1)
        .output("b_out", DataType.INT64, -1)
        .build();
  }

  private static Tensor a(int rows, int cols, float base) {
    float[] v = new float[rows * cols];
    for (int i = 0; i < v.length; i++) {
      v[i] = base + i;
    }
    return Tensor.ofFloats("a", new long[] {rows, cols}, v);
  }

  private static Tensor b(int rows) {
    return new Tensor("b", DataType.INT64, new long[] {rows}, new byte[rows * 8]);
  }

  private static InferenceRequest request(List<String> outputs, Tensor... inputs) {
    return new InferenceRequest("", List.of(inputs), outputs, Map.of());
  }

  @Test
  void identityReturnsEachRequestItsOwnInputs() {
    try (ModelRunner runner = ModelRunners.load(twoInputs(IDENTITY), List.of())) {
      List<InferenceRequest> batch = List.of(
          InferenceRequest.of(a(1, 3, 0), b(1)), InferenceRequest.of(b(3), a(3, 3, 100)), InferenceRequest.of(a(2, 3, 50), b(2)));

      List<List<Tensor>> out = runner.infer(batch);

      for (int r = 0; r < batch.size(); r++) {
        Tensor in = batch.get(r).inputs().stream().filter(t -> t.name().equals("a")).findFirst().orElseThrow();
        assertThat(out.get(r)).extracting(Tensor::name).containsExactly("a_out", "b_out");
        assertThat(out.get(r).get(0).data()).isEqualTo(in.data());
        assertThat(out.get(r).get(0).shape()).isEqualTo(in.shape());
      }
      ModelLoadInfo info = runner.loadInfo();
      assertThat(info.format()).isEqualTo("builtin");
      assertThat(info.warmupBatchSizes()).containsExactly(1);
    }
  }

  @Test
  void identityWithoutDeclaredOutputsNamesThemLikeTheInputs() {
    ModelSpec spec = ModelSpec.builder().uri("builtin:identity").engine("builtin").input("x", DataType.FP32, -1, 4).build();
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      Tensor x = Tensor.ofFloats("x", new long[] {1, 4}, new float[] {1, 2, 3, 4});

      assertThat(runner.infer(List.of(InferenceRequest.of(x))).get(0)).containsExactly(x);
    }
  }

  @ParameterizedTest
  @EnumSource(value = DataType.class, names = "BYTES", mode = EnumSource.Mode.EXCLUDE)
  void stackingAndSplittingKeepBytesForEveryDatatype(DataType type) {
    ModelSpec spec = ModelSpec.builder().uri("builtin:identity").engine("Builtin").input("x", type, -1, 2).build();
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      List<InferenceRequest> batch = new ArrayList<>();
      for (int rows : new int[] {2, 1, 3}) {
        byte[] data = new byte[rows * 2 * type.byteSize()];
        for (int i = 0; i < data.length; i++) {
          data[i] = (byte) (type == DataType.BOOL ? (i + rows) % 2 : i * 7 + rows);
        }
        batch.add(InferenceRequest.of(new Tensor("x", type, new long[] {rows, 2}, data)));
      }

      List<List<Tensor>> out = runner.infer(batch);

      for (int r = 0; r < batch.size(); r++) {
        assertThat(out.get(r).get(0)).isEqualTo(batch.get(r).inputs().get(0));
      }
    }
  }

  @Test
  void outputsAreFilteredPerRequestInTheOrderAsked() {
    try (ModelRunner runner = ModelRunners.load(twoInputs(IDENTITY), List.of())) {
      List<List<Tensor>> out = runner.infer(List.of(
          request(List.of("b_out"), a(1, 2, 0), b(1)),
          request(List.of("b_out", "a_out"), a(2, 2, 0), b(2)),
          request(List.of(), a(1, 2, 0), b(1))));

      assertThat(out.get(0)).extracting(Tensor::name).containsExactly("b_out");
      assertThat(out.get(1)).extracting(Tensor::name).containsExactly("b_out", "a_out");
      assertThat(out.get(1).get(0).shape()).containsExactly(2);
      assertThat(out.get(2)).extracting(Tensor::name).containsExactly("a_out", "b_out");
    }
  }

  static List<Object[]> invalidRequests() {
    return List.of(
        new Object[] {"missing", request(List.of(), a(1, 2, 0)), "missing input 'b'"},
        new Object[] {"unexpected", request(List.of(), a(1, 2, 0), b(1), Tensor.ofFloats("c", new long[] {1}, new float[1])),
            "inputs[2].name: model 'pair' has no input 'c'"},
        new Object[] {"duplicate", request(List.of(), a(1, 2, 0), b(1), b(1)), "inputs[2].name: input 'b' given more than once"},
        new Object[] {"datatype", request(List.of(), a(1, 2, 0), new Tensor("b", DataType.INT32, new long[] {1}, new byte[4])),
            "inputs[1].datatype: input 'b' is INT64, got INT32"},
        new Object[] {"rank", request(List.of(), a(1, 2, 0), new Tensor("b", DataType.INT64, new long[] {1, 1}, new byte[8])),
            "inputs[1].shape: [1, 1] does not match [-1] of input 'b'"},
        new Object[] {"unknown output", request(List.of("c_out"), a(1, 2, 0), b(1)), "outputs[0].name: model 'pair' has no output 'c_out'"},
        new Object[] {"repeated output", request(List.of("a_out", "a_out"), a(1, 2, 0), b(1)),
            "outputs[1].name: output 'a_out' requested more than once"});
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("invalidRequests")
  void invalidRequestsAreRejectedNamingTheTensor(String caseName, InferenceRequest bad, String message) {
    ModelSpec spec = twoInputs(IDENTITY);
    RequestValidator validator = new RequestValidator("pair", spec.signature(), 0);
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      InferenceRequest good = InferenceRequest.of(a(1, 2, 0), b(1));

      assertThatThrownBy(() -> validator.validate(bad))
          .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
          .hasMessageContaining(message);
      assertThat(validator.validate(good).request()).isSameAs(good);
      assertThat(runner.infer(List.of(validator.validate(good).request()))).hasSize(1);
    }
  }

  @Test
  void aBatchTheRunnerCannotLayOutIsInvalidAndLeavesItUsable() {
    try (ModelRunner runner = ModelRunners.load(twoInputs(IDENTITY), List.of())) {
      InferenceRequest good = InferenceRequest.of(a(1, 2, 0), b(1));

      assertThatThrownBy(() -> runner.infer(List.of(good, request(List.of(), a(1, 2, 0)))))
          .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
          .hasMessageContaining("missing input 'b'");
      assertThatThrownBy(() -> runner.infer(List.of(request(List.of("c_out"), a(1, 2, 0), b(1)))))
          .isInstanceOf(InferenceException.class).hasMessageContaining("unknown output 'c_out'");
      assertThat(runner.infer(List.of(good))).hasSize(1);
    }
  }

  @Test
  void requestsWhoseOtherDimensionsDifferCannotShareABatch() {
    try (ModelRunner runner = ModelRunners.load(twoInputs(IDENTITY), List.of())) {
      InferenceRequest narrow = InferenceRequest.of(a(1, 2, 0), b(1));
      InferenceRequest wide = new InferenceRequest("wide-one", List.of(a(1, 3, 0), b(1)), List.of(), Map.of());
      RequestValidator validator = new RequestValidator("pair", twoInputs(IDENTITY).signature(), 0);
      validator.validate(narrow);
      validator.validate(wide);

      assertThatThrownBy(() -> runner.infer(List.of(narrow, wide)))
          .isInstanceOfSatisfying(InferenceException.class, e -> assertThat(e.kind()).isEqualTo(InferenceException.Kind.INVALID_INPUT))
          .hasMessageContaining("input 'a' of request #1 (id 'wide-one') has shape [1, 3] but request #0 has [1, 2]");
    }
  }

  @Test
  void crashModelThrowsAWorkerFailureWhenAnInputHoldsNaN() {
    ModelSpec spec = ModelSpec.builder().uri("builtin:crash-on-nan").engine("Builtin")
        .input("x", DataType.FP32, -1, 3).output("y", DataType.FP32, -1, 3).warmupBatchSizes(1, 4).build();
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      InferenceRequest fine = InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 3}, new float[] {1, 2, 3}));
      InferenceRequest poison = InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 3}, new float[] {Float.NaN, 0, 0}));

      assertThat(runner.infer(List.of(fine, fine))).hasSize(2);
      assertThatThrownBy(() -> runner.infer(List.of(fine, poison, fine)))
          .isInstanceOf(ModelExecutionException.class)
          .isNotInstanceOf(InferenceException.class)
          .hasMessageContaining("simulated worker crash");
      assertThat(runner.loadInfo().warmupBatchSizes()).containsExactly(1, 4);
    }
  }

  @Test
  void sleepModelHoldsItsWorkerForTheLargestFirstInputElementInMillisAndReturnsItsInputs() {
    ModelSpec spec = ModelSpec.builder().uri("builtin:sleep").engine("Builtin")
        .input("ms", DataType.FP32, -1, 2).input("n", DataType.INT32, -1).build();
    try (ModelRunner runner = ModelRunners.load(spec, List.of())) {
      byte[] big = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(100_000).array();
      Tensor n = new Tensor("n", DataType.INT32, new long[] {1}, big); // not the first input: no effect
      InferenceRequest quick = InferenceRequest.of(Tensor.ofFloats("ms", new long[] {1, 2}, new float[] {Float.NaN, -5}), n);
      InferenceRequest slow = InferenceRequest.of(Tensor.ofFloats("ms", new long[] {1, 2}, new float[] {3, 60}), n);

      long start = System.nanoTime();
      List<List<Tensor>> out = runner.infer(List.of(quick, slow));
      long tookMillis = (System.nanoTime() - start) / 1_000_000;

      assertThat(tookMillis).as("slept for the batch's largest element").isGreaterThanOrEqualTo(60);
      assertThat(out.get(1).get(0).asFloats()).containsExactly(3, 60);
      assertThat(out.get(0).get(1).data()).isEqualTo(big);
    }
  }

  @Test
  void closedRunnerRefusesWork() {
    ModelRunner runner = ModelRunners.load(twoInputs(IDENTITY), List.of());
    runner.close();

    assertThatThrownBy(() -> runner.infer(List.of(InferenceRequest.of(a(1, 2, 0), b(1)))))
        .isInstanceOf(IllegalStateException.class);
  }
}
