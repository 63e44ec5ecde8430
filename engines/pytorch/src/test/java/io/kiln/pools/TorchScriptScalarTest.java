package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A scalar through DJL's PyTorch engine (issue #36): the scripted module of the test resources'
 * {@code torchscript/scale} takes x FP32 [N, 4] and k INT64 [] (a 0-d tensor) and returns y = x * k and 2 * k, a
 * scalar output.
 */
class TorchScriptScalarTest {

  private static ModelRunner runner;

  @BeforeAll
  static void load() throws URISyntaxException {
    Path folder = Path.of(TorchScriptScalarTest.class.getResource("/io/kiln/pools/torchscript/scale/scale.pt").toURI())
        .getParent();
    runner = ModelRunners.load(ModelSpec.builder().uri(folder).engine(ModelSpec.ENGINE_PYTORCH)
        .input("x", DataType.FP32, -1, 4).input("k", DataType.INT64)
        .output("y", DataType.FP32, -1, 4).output("twice", DataType.INT64).warmupBatchSizes(1, 2).build(), List.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  private static Tensor k(long value) {
    return new Tensor("k", DataType.INT64, new long[0],
        ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array());
  }

  private static InferenceRequest request(int rows, long k) {
    float[] x = new float[rows * 4];
    for (int i = 0; i < x.length; i++) {
      x[i] = i + 1;
    }
    return new InferenceRequest("r", List.of(Tensor.ofFloats("x", new long[] {rows, 4}, x), k(k)), List.of(), Map.of());
  }

  @Test
  void theScalarGoesInAsAZeroDimensionalTensorAndAScalarOutputComesBackWithShapeEmpty() {
    assertThat(runner.loadInfo().warmupProblems()).isEmpty();

    List<Tensor> out = runner.infer(List.of(request(2, 3))).get(0);

    assertThat(out.get(0).shape()).containsExactly(2, 4);
    assertThat(out.get(0).asFloats()).containsExactly(3, 6, 9, 12, 15, 18, 21, 24);
    assertThat(out.get(1)).isEqualTo(new Tensor("twice", DataType.INT64, new long[0], k(6).data()));
  }

  @Test
  void aBatchGivesEachRequestItsOwnScalar() {
    List<List<Tensor>> out = runner.infer(List.of(request(1, 2), request(3, 2), request(1, 5)));

    assertThat(out).extracting(o -> o.get(1)).containsExactly(new Tensor("twice", DataType.INT64, new long[0],
        k(4).data()), new Tensor("twice", DataType.INT64, new long[0], k(4).data()),
        new Tensor("twice", DataType.INT64, new long[0], k(10).data()));
    assertThat(out.get(1).get(0).shape()).containsExactly(3, 4);
    assertThat(out.get(2).get(0).asFloats()).containsExactly(5, 10, 15, 20);
  }
}
