package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.loadtest.impl.ModelInferEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RequestEncodingTest {

  @Test
  void jsonRequestBecomesLittleEndianRawTensors() {
    RequestTemplate t = RequestTemplate.fromJson("r", ("{\"inputs\":["
        + "{\"name\":\"f\",\"shape\":[2,2],\"datatype\":\"FP32\",\"data\":[[1.5,-2],[3,4]]},"
        + "{\"name\":\"i\",\"shape\":[3],\"datatype\":\"INT64\",\"data\":[1,-1,4294967296]},"
        + "{\"name\":\"b\",\"shape\":[2],\"datatype\":\"BOOL\",\"data\":[true,false]}]}").getBytes(StandardCharsets.UTF_8));

    List<TensorData> in = t.inputs();
    assertThat(in).extracting(TensorData::name).containsExactly("f", "i", "b");
    ByteBuffer f = in.get(0).raw();
    assertThat(new float[] {f.getFloat(), f.getFloat(), f.getFloat(), f.getFloat()}).containsExactly(1.5f, -2f, 3f, 4f);
    ByteBuffer i = in.get(1).raw();
    assertThat(new long[] {i.getLong(), i.getLong(), i.getLong()}).containsExactly(1L, -1L, 4294967296L);
    assertThat(in.get(2).byteSize()).isEqualTo(2);
    assertThat(in.get(0).shape()).containsExactly(2, 2);
  }

  @Test
  void tensorsWithoutRawFormStillWorkAsJsonButSayWhyNotOtherwise() {
    RequestTemplate bytes = RequestTemplate.fromJson("s", "{\"inputs\":[{\"name\":\"s\",\"shape\":[1],\"datatype\":\"BYTES\",\"data\":[\"hi\"]}]}".getBytes());
    RequestTemplate wrongCount = RequestTemplate.fromJson("w", "{\"inputs\":[{\"name\":\"w\",\"shape\":[3],\"datatype\":\"FP32\",\"data\":[1]}]}".getBytes());

    assertThat(bytes.jsonSize()).isPositive();
    assertThatThrownBy(bytes::inputs).isInstanceOf(IllegalStateException.class).hasMessageContaining("BYTES");
    assertThatThrownBy(wrongCount::inputs).hasMessageContaining("1 data elements for shape of 3");
    assertThatThrownBy(() -> RequestTemplate.fromJson("x", "{\"outputs\":[]}".getBytes()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inputs");
    assertThatThrownBy(() -> RequestTemplate.fromJson("x", "not json".getBytes())).hasMessageContaining("not JSON");
  }

  @Test
  void generatedTensorJsonAndRawAgree() {
    RequestTemplate t = RequestTemplate.generatedFp32("input", new long[] {1, 3}, 9);
    RequestTemplate reparsed = RequestTemplate.fromJson("again", t.json());

    assertThat(t.label()).isEqualTo("fp32:1x3");
    assertThat(reparsed.inputs().get(0).raw()).isEqualTo(t.inputs().get(0).raw());
    assertThatThrownBy(() -> RequestTemplate.generatedFp32("x", new long[] {1 << 20, 1 << 20}, 1))
        .hasMessageContaining("exceeds");
  }

  @Test
  void modelInferRequestDecodesWithAnIndependentDecoder() throws Exception {
    RequestTemplate t = RequestTemplate.generatedFp32("input", new long[] {1, 300}, 5);
    byte[] bytes = ModelInferEncoder.encode("resnet", "2", t.inputs());

    DecodedInferRequest d = DecodedInferRequest.decode(bytes);
    assertThat(d.model()).isEqualTo("resnet");
    assertThat(d.version()).isEqualTo("2");
    assertThat(d.inputs()).containsExactly(new DecodedInferRequest.Input("input", "FP32", List.of(1L, 300L)));
    byte[] expected = new byte[1200];
    t.inputs().get(0).raw().get(expected);
    assertThat(d.raw()).hasSize(1);
    assertThat(d.raw().get(0)).isEqualTo(expected);
  }

  @Test
  void mixDrawsByWeight(@TempDir Path dir) throws Exception {
    Path mix = dir.resolve("mix.txt");
    Files.writeString(mix, "3 fp32:1x2\n\n# comment\n1 fp32:1x4\n");
    RequestMix m = RequestMix.fromFile(mix);

    assertThat(m.entries()).extracting(e -> e.template().label()).containsExactly("fp32:1x2", "fp32:1x4");
    assertThat(m.pick(0.0)).isZero();
    assertThat(m.pick(0.74)).isZero();
    assertThat(m.pick(0.76)).isEqualTo(1);
    assertThat(m.pick(0.9999)).isEqualTo(1);
    Files.writeString(mix, "3 fp32:1x2\nbad line here\n");
    assertThatThrownBy(() -> RequestMix.fromFile(mix)).hasMessageContaining(":2:");
  }
}
