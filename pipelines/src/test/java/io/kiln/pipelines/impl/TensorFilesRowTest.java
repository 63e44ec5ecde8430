package io.kiln.pipelines.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pipelines.InputFormat;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A raw file into an input with a variable dimension beside the first: one row the file fills along it. */
class TensorFilesRowTest {

  @Test
  void anEncodedImageIsOneRowOfItsBytes() {
    byte[] png = {(byte) 0x89, 'P', 'N', 'G', 1, 2, 3};
    Tensor t = TensorFiles.decode(png, InputFormat.RAW, "image",
        List.of(new TensorSpec("image", DataType.UINT8, new long[] {-1, -1}))).get(0);
    assertThat(t.shape()).containsExactly(1, png.length);
    assertThat(t.data()).isEqualTo(png);
  }

  @Test
  void fixedDimensionsAroundTheVariableOneDivideTheFile() {
    TensorSpec audio = new TensorSpec("pcm", DataType.FP32, new long[] {1, -1, 2}); // stereo samples
    Tensor t = TensorFiles.decode(new byte[4 * 2 * 5], InputFormat.RAW, "", List.of(audio)).get(0);
    assertThat(t.shape()).containsExactly(1, 5, 2);
    assertThatThrownBy(() -> TensorFiles.decode(new byte[4 * 3], InputFormat.RAW, "", List.of(audio)))
        .hasMessageContaining("a file of 12 bytes does not fill input 'pcm' [1, -1, 2] FP32 (8 bytes per step");
  }

  @Test
  void twoVariableDimensionsOrSeveralFixedRowsAreRefused() {
    assertThatThrownBy(() -> TensorFiles.decode(new byte[8], InputFormat.RAW, "",
        List.of(new TensorSpec("x", DataType.UINT8, new long[] {-1, -1, -1}))))
        .hasMessageContaining("at most one variable dimension beside the first (use format oip_json)");
    assertThatThrownBy(() -> TensorFiles.decode(new byte[8], InputFormat.RAW, "",
        List.of(new TensorSpec("x", DataType.UINT8, new long[] {2, -1}))))
        .hasMessageContaining("takes exactly 2 rows; a raw file fills one row");
  }
}
