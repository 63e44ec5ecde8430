package io.kiln.deploy.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.TensorSpec;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Synthetic warm-up requests follow the model's signature in every encoding, or say why they cannot. */
class WarmupRequestsTest {

  private static ModelSignature signature(TensorSpec... inputs) {
    return new ModelSignature(List.of(inputs), List.of(new TensorSpec("y", DataType.FP32, new long[] {-1, 2})));
  }

  @Test
  void everyInputTakesTheRowsAlongItsBatchDimensionAndItsDatatypeInEveryEncoding() {
    ModelSignature sig = signature(new TensorSpec("ids", DataType.INT64, new long[] {-1, 3}),
        new TensorSpec("mask", DataType.BOOL, new long[] {-1, 3}), new TensorSpec("h", DataType.FP16, new long[] {2}));
    WarmupRequests r = WarmupRequests.of("m", sig, 4);

    JsonObject json = new JsonObject(r.json);
    assertThat(json.getJsonArray("inputs")).hasSize(3);
    JsonObject ids = json.getJsonArray("inputs").getJsonObject(0);
    assertThat(ids.getJsonArray("shape").getList()).containsExactly(4, 3);
    assertThat(ids.getString("datatype")).isEqualTo("INT64");
    assertThat(ids.getJsonArray("data")).hasSize(12);
    assertThat(json.getJsonArray("inputs").getJsonObject(1).getJsonArray("data").getValue(0)).isInstanceOf(Boolean.class);
    assertThat(json.getJsonArray("inputs").getJsonObject(2).getJsonArray("shape").getList()).containsExactly(2);

    int head = Integer.parseInt(r.binaryHeaderLength);
    JsonObject header = new JsonObject(r.binary.getBuffer(0, head));
    assertThat(header.getJsonArray("inputs").getJsonObject(0).getJsonObject("parameters").getInteger("binary_data_size"))
        .isEqualTo(12 * 8);
    assertThat(header.getJsonArray("outputs").getJsonObject(0).getString("name")).isEqualTo("y");
    assertThat(r.binary.length() - head).isEqualTo(12 * 8 + 12 + 2 * 2);

    assertThat(r.grpc.getModelName()).isEqualTo("m");
    assertThat(r.grpc.getInputs(0).getShapeList()).containsExactly(4L, 3L);
    assertThat(r.grpc.getRawInputContentsList()).extracting(b -> b.size()).containsExactly(96, 12, 4);
  }

  @Test
  void bytesElementsAreShortStringsLengthPrefixedInTheBinaryAndRawEncodings() {
    WarmupRequests r = WarmupRequests.of("m", signature(new TensorSpec("t", DataType.BYTES, new long[] {-1, 2})), 2);

    List<Object> data = new JsonObject(r.json).getJsonArray("inputs").getJsonObject(0).getJsonArray("data").getList();
    assertThat(data).hasSize(4).allSatisfy(v -> assertThat(v).asString().matches("w[0-9]{1,3}"));
    byte[] raw = r.grpc.getRawInputContents(0).toByteArray();
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(raw).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (Object v : data) {
      byte[] word = new byte[b.getInt()];
      b.get(word);
      assertThat(new String(word, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo(v);
    }
    assertThat(b.remaining()).isZero();
    int head = Integer.parseInt(r.binaryHeaderLength);
    assertThat(new JsonObject(r.binary.getBuffer(0, head)).getJsonArray("inputs").getJsonObject(0)
        .getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(raw.length);
    assertThat(r.binary.getBuffer(head, r.binary.length()).getBytes()).isEqualTo(raw);
  }

  @Test
  void aStreamingModelsRequestIsOneGenerateRowNestedAsItsShapeWithShortVariableDimensions() {
    ModelSignature sig = signature(new TensorSpec("prompt", DataType.INT64, new long[] {-1, -1}),
        new TensorSpec("grid", DataType.FP32, new long[] {-1, 2, 3}), new TensorSpec("text", DataType.BYTES, new long[] {1}));
    assertThat(WarmupRequests.why(sig, true)).isNull();
    WarmupRequests r = WarmupRequests.of("m", sig, 1, true);

    JsonObject generate = new JsonObject(r.generate);
    assertThat(generate.fieldNames()).containsExactly("prompt", "grid", "text");
    assertThat(generate.getJsonArray("prompt")).hasSize(WarmupRequests.STREAM_INNER);
    assertThat(generate.getJsonArray("grid")).hasSize(2).allSatisfy(row -> assertThat((Iterable<?>) row).hasSize(3));
    assertThat(generate.getJsonArray("text").getString(0)).matches("w[0-9]{1,3}");
    // The same values as the infer encodings' first row.
    List<Object> promptData = new JsonObject(r.json).getJsonArray("inputs").getJsonObject(0).getJsonArray("data")
        .getList();
    assertThat(generate.getJsonArray("prompt").getList()).isEqualTo(promptData);
    assertThat(r.grpc.getInputs(0).getShapeList()).containsExactly(1L, (long) WarmupRequests.STREAM_INNER);
  }

  @Test
  void halfFloatsAreExact() {
    assertThat(WarmupRequests.half(1f)).isEqualTo((short) 0x3c00);
    assertThat(WarmupRequests.half(-2.5f)).isEqualTo((short) 0xc100);
    assertThat(WarmupRequests.half(0.0625f)).isEqualTo((short) 0x2c00);
  }

  @Test
  void aSignatureThatCannotBeSynthesisedSaysWhy() {
    assertThat(WarmupRequests.why(signature(new TensorSpec("h", DataType.FP16, new long[] {-1, 1})), true))
        .isEqualTo("input 'h' is FP16, which the generate extension does not take");
    assertThat(WarmupRequests.why(signature(new TensorSpec("img", DataType.FP32, new long[] {-1, 3, -1, -1}))))
        .isEqualTo("input 'img' has a variable dimension 2 in [-1, 3, -1, -1]");
    assertThat(WarmupRequests.why(new ModelSignature(List.of(), List.of()))).isEqualTo("it declares no inputs");
    assertThatThrownBy(() -> WarmupRequests.of("m", signature(new TensorSpec("t", DataType.FP32, new long[] {-1, -1})), 1))
        .hasMessage("no warm-up input for model 'm': input 't' has a variable dimension 1 in [-1, -1]");
  }
}
