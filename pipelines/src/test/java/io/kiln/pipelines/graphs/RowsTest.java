package io.kiln.pipelines.graphs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A source's {@code [i]}: one row of a step's answer as a tensor of its own. */
class RowsTest {

  @Test
  void aRowDropsTheFirstDimension() {
    Tensor crops = Tensor.ofFloats("crops", new long[] {2, 3, 2}, new float[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    Tensor second = Rows.select(crops, 1, "x", "crop.crops");
    assertThat(second.name()).isEqualTo("x");
    assertThat(second.shape()).containsExactly(3, 2);
    assertThat(second.asFloats()).containsExactly(6, 7, 8, 9, 10, 11);
    assertThat(Rows.select(Tensor.ofFloats("e", new long[] {1, 0, 4}, new float[0]), 0, "x", "s.e").shape())
        .containsExactly(0, 4);
  }

  @Test
  void aRowOfBytesKeepsItsElements() {
    Tensor text = Tensor.ofBytes("text", new long[] {2, 2}, List.of(bytes("a"), bytes("bc"), bytes(""), bytes("déf")));
    Tensor row = Rows.select(text, 1, "t", "ctc.text");
    assertThat(row.datatype()).isEqualTo(DataType.BYTES);
    assertThat(row.shape()).containsExactly(2);
    assertThat(row.byteElements()).containsExactly(bytes(""), bytes("déf"));
  }

  @Test
  void aMissingRowIsTheGraphsError() {
    Tensor one = Tensor.ofFloats("y", new long[] {1, 2}, new float[] {1, 2});
    assertThatThrownBy(() -> Rows.select(one, 1, "x", "step.y")).isInstanceOfSatisfying(InferenceException.class,
        e -> {
          assertThat(e.kind()).isEqualTo(InferenceException.Kind.INTERNAL);
          assertThat(e.getMessage()).isEqualTo("step.y is FP32[1, 2]: it has no row 1");
        });
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
