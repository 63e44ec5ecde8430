package io.kiln.engines.pytorch.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

class StagedInputsTest {

  private final StagedInputs staged = new StagedInputs(List.of(new TensorSpec("x", DataType.FP32, new long[] {-1, 2}),
      new TensorSpec("m", DataType.INT8, new long[] {-1})));

  private static List<Tensor> request(int rows, int seed) {
    byte[] x = new byte[rows * 2 * 4];
    byte[] m = new byte[rows];
    for (int i = 0; i < x.length; i++) {
      x[i] = (byte) (seed + i);
    }
    for (int i = 0; i < m.length; i++) {
      m[i] = (byte) (100 + seed + i);
    }
    return List.of(new Tensor("x", DataType.FP32, new long[] {rows, 2}, x), new Tensor("m", DataType.INT8,
        new long[] {rows}, m));
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  @Test
  void gathersEachInputsRowsInRequestOrderIntoOneDirectBufferPerInput() {
    List<Tensor> a = request(1, 0);
    List<Tensor> b = request(2, 50);
    StagedInputs.Batch batch = staged.gather(List.of(a, b), 3);
    assertThat(batch.names()).containsExactly("x", "m");
    assertThat(batch.shapes().get(0).getShape()).containsExactly(3, 2);
    assertThat(batch.shapes().get(1).getShape()).containsExactly(3);
    assertThat(batch.types()).containsExactly(ai.djl.ndarray.types.DataType.FLOAT32, ai.djl.ndarray.types.DataType.INT8);
    ByteBuffer x = batch.data().get(0);
    assertThat(x.isDirect()).isTrue();
    assertThat(x.position()).as("DJL reads from the buffer's start").isZero();
    byte[] want = new byte[24];
    System.arraycopy(a.get(0).data(), 0, want, 0, 8);
    System.arraycopy(b.get(0).data(), 0, want, 8, 16);
    assertThat(bytes(x)).isEqualTo(want);
    assertThat(bytes(batch.data().get(1))).containsExactly(100, 150, 151);
  }

  @Test
  void anInputThatIsNotBatchedGoesOnceWithItsOwnShape() {
    StagedInputs withScalar = new StagedInputs(List.of(new TensorSpec("x", DataType.FP32, new long[] {-1, 2}),
        new TensorSpec("k", DataType.INT8, new long[0])));
    Tensor k = new Tensor("k", DataType.INT8, new long[0], new byte[] {7});
    List<Tensor> a = List.of(request(1, 0).get(0), k);
    List<Tensor> b = List.of(request(2, 50).get(0), k);

    StagedInputs.Batch batch = withScalar.gather(List.of(a, b), 3);

    assertThat(batch.shapes().get(0).getShape()).containsExactly(3, 2);
    assertThat(batch.shapes().get(1).getShape()).isEmpty();
    assertThat(bytes(batch.data().get(1))).containsExactly(7);
    assertThat(withScalar.gather(List.of(a), -1).shapes().get(0).getShape()).as("one request's: as given")
        .containsExactly(1, 2);
  }

  @Test
  void keepsItsBuffersAcrossCallsAndGrowsThemForALargerBatch() {
    ByteBuffer first = staged.gather(List.of(request(1, 0)), 1).data().get(0);
    ByteBuffer again = staged.gather(List.of(request(2, 7)), 2).data().get(0);
    assertThat(again).isSameAs(first);
    assertThat(again.remaining()).isEqualTo(16);
    List<Tensor> big = request(1000, 3);
    ByteBuffer grown = staged.gather(List.of(big), 1000).data().get(0);
    assertThat(grown).isNotSameAs(first);
    assertThat(bytes(grown)).isEqualTo(big.get(0).data());
    assertThat(staged.gather(List.of(request(1, 9)), 1).data().get(0)).isSameAs(grown);
  }
}
