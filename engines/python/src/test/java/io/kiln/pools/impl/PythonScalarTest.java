package io.kiln.pools.impl;

import static io.kiln.pools.impl.ScalarBatchingTest.int64;
import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.PythonTests;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Scalars through a real Python process (issue #36): the test model {@code scalar/model.py} gets INT64 and BYTES
 * scalars as 0-d numpy arrays and returns 0-d arrays, which come back with shape [] (numpy's ascontiguousarray would
 * have made them [1]).
 */
class PythonScalarTest {

  private static ModelRunner runner;

  @BeforeAll
  static void load() {
    runner = ModelRunners.load(ModelSpec.builder().uri(PythonTests.testModel("scalar")).engine(ModelSpec.ENGINE_PYTHON)
        .python(PythonTests.options().build())
        .input("x", DataType.FP32, -1, 4).input("k", DataType.INT64).input("tag", DataType.BYTES)
        .output("y", DataType.FP32, -1, 4).output("rows", DataType.INT64).output("label", DataType.BYTES)
        .warmupBatchSizes(1, 2).intraOpThreads(1).build(), List.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  private static InferenceRequest request(int rows, long k, String tag) {
    float[] x = new float[rows * 4];
    java.util.Arrays.fill(x, 1.5f);
    return new InferenceRequest("r", List.of(Tensor.ofFloats("x", new long[] {rows, 4}, x), int64("k", k),
        Tensor.ofBytes("tag", new long[0], List.of(tag.getBytes(java.nio.charset.StandardCharsets.UTF_8)))),
        List.of(), Map.of());
  }

  private static String text(Tensor scalar) {
    return new String(scalar.byteElements().get(0), java.nio.charset.StandardCharsets.UTF_8);
  }

  @Test
  void scalarsGoInAsZeroDimensionalArraysAndComeBackWithShapeEmpty() {
    assertThat(runner.loadInfo().warmupProblems()).isEmpty();

    List<Tensor> out = runner.infer(List.of(request(2, 4, "vad"))).get(0);

    assertThat(out.get(0).shape()).containsExactly(2, 4);
    assertThat(out.get(0).asFloats()).containsOnly(6f);
    assertThat(out.get(1)).isEqualTo(int64("rows", 2));
    assertThat(out.get(2).shape()).isEmpty();
    assertThat(text(out.get(2))).isEqualTo("vad:4");
  }

  @Test
  void aBatchGivesEachRequestItsOwnScalarOutputs() {
    List<List<Tensor>> out = runner.infer(List.of(request(1, 2, "a"), request(3, 2, "a"), request(1, 3, "b")));

    assertThat(out).extracting(o -> o.get(1)).containsExactly(int64("rows", 1), int64("rows", 3), int64("rows", 1));
    assertThat(text(out.get(2).get(2))).isEqualTo("b:3");
    assertThat(out.get(1).get(0).asFloats()).hasSize(12).containsOnly(3f);
  }
}
