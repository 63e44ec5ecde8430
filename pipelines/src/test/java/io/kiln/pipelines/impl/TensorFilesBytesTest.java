package io.kiln.pipelines.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pipelines.InputFormat;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.testkit.OipRequest;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** BYTES through job and pipeline files: a raw file is one element, JSON files carry strings, results keep every byte. */
class TensorFilesBytesTest {

  private static final TensorSpec TEXT = new TensorSpec("text", DataType.BYTES, new long[] {-1});
  private static final TensorSpec IMAGE = new TensorSpec("image", DataType.BYTES, new long[] {-1, 1});

  @Test
  void aRawFileIsTheOneElementOfABytesInputWhateverItHolds() {
    byte[] jpeg = {(byte) 0xff, (byte) 0xd8, (byte) 0xff, 0, 1, 2};
    Tensor t = TensorFiles.decode(jpeg, InputFormat.RAW, "", List.of(IMAGE)).get(0);
    assertThat(t.datatype()).isEqualTo(DataType.BYTES);
    assertThat(t.shape()).containsExactly(1, 1);
    assertThat(t.byteElements()).singleElement().isEqualTo(jpeg);

    byte[] doc = "the quick brown fox".getBytes(StandardCharsets.UTF_8);
    Tensor text = TensorFiles.decode(doc, InputFormat.RAW, "text", List.of(TEXT, IMAGE)).get(0);
    assertThat(text.shape()).containsExactly(1);
    assertThat(text.byteElements()).singleElement().isEqualTo(doc);
    assertThat(TensorFiles.decode(new byte[0], InputFormat.RAW, "", List.of(TEXT)).get(0).byteElements())
        .singleElement().isEqualTo(new byte[0]);
  }

  @Test
  void aBytesInputWithAFixedDimensionAboveOneIsRefusedNamingTheShape() {
    TensorSpec pair = new TensorSpec("pair", DataType.BYTES, new long[] {-1, 2});
    assertThatThrownBy(() -> TensorFiles.decode(new byte[3], InputFormat.RAW, "", List.of(pair)))
        .isInstanceOf(StepFailedException.class)
        .hasMessageContaining("input 'pair' has shape [-1, 2]")
        .hasMessageContaining("one BYTES element");
  }

  @Test
  void jsonInputFilesCarryBytesAsStrings() {
    byte[] json = OipRequest.create().input(OipRequest.Input.bytes("text", new long[] {2}, "héllo", "")).jsonBytes();
    Tensor t = TensorFiles.decode(json, InputFormat.OIP_JSON, "", List.of(TEXT)).get(0);
    assertThat(t.byteElements()).containsExactly("héllo".getBytes(StandardCharsets.UTF_8), new byte[0]);
    String numbers = """
        {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [7]}]}""";
    assertThatThrownBy(() -> TensorFiles.decode(numbers.getBytes(StandardCharsets.UTF_8), InputFormat.OIP_JSON, "",
        List.of(TEXT))).isInstanceOf(StepFailedException.class).hasMessageContaining("BYTES data are strings, got 7");
  }

  @Test
  void bytesOutputsAreTextWhenUtf8AndBase64OtherwiseSoNoByteIsLost() {
    Tensor words = Tensor.ofBytes("words", new long[] {1, 2},
        List.of("naïve".getBytes(StandardCharsets.UTF_8), "{\"a\":1}".getBytes(StandardCharsets.UTF_8)));
    Map<String, Object> r = TensorFiles.toResult(words, 100);
    assertThat(r).containsEntry("datatype", "BYTES").containsEntry("shape", List.of(1L, 2L))
        .containsEntry("data", List.of("naïve", "{\"a\":1}")).doesNotContainKey("data_base64");

    byte[] binary = {(byte) 0xff, (byte) 0xfe, 0};
    Tensor mixed = Tensor.ofBytes("mixed", new long[] {2}, List.of("ok".getBytes(StandardCharsets.UTF_8), binary));
    Map<String, Object> m = TensorFiles.toResult(mixed, 100);
    assertThat(m).doesNotContainKey("data").containsEntry("data_base64",
        List.of(Base64.getEncoder().encodeToString("ok".getBytes(StandardCharsets.UTF_8)),
            Base64.getEncoder().encodeToString(binary)));
    assertThat(TensorFiles.toResult(mixed, 1)).containsEntry("data_omitted", true);
  }

  @Test
  void malformedBytesOutputDataFailsTheStepNamingTheOutput() {
    Tensor bad = new Tensor("bad", DataType.BYTES, new long[] {1}, new byte[] {9, 0, 0, 0, 1});
    assertThatThrownBy(() -> TensorFiles.toResult(bad, 10)).isInstanceOf(StepFailedException.class)
        .hasMessageContaining("output 'bad'");
  }
}
