package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.Tensor;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * BYTES in each codec on a rank-2 text model: JSON (the single pass and the Jackson reference, held to the same
 * result), nested and flat; the binary extension's length prefixes; gRPC bytes_contents and raw contents; the
 * malformed forms refused naming the input.
 */
class BytesCodecTest {

  static final ModelInfo TEXT = new ModelInfo("text", "1", List.of("1"), "python",
      TestModels.signature(List.of(TestModels.spec("text", DataType.BYTES, -1, -1)),
          List.of(TestModels.spec("upper", DataType.BYTES, -1, -1))), true, 0);
  final HttpInferDecoder fast = new HttpInferDecoder(new JsonRequestDecoder(1 << 20));
  final HttpInferDecoder jackson = new HttpInferDecoder(new JsonRequestDecoder(1 << 20), false);

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  Tensor bothJsonPaths(String body) {
    SinglePassJsonDecoderTest.Outcome a = SinglePassJsonDecoderTest.outcome(fast, TEXT, utf8(body), null);
    SinglePassJsonDecoderTest.Outcome b = SinglePassJsonDecoderTest.outcome(jackson, TEXT, utf8(body), null);
    assertThat(a).as(body).isEqualTo(b);
    assertThat(a.error()).as(body).isNull();
    return a.tensors().get(0);
  }

  String jsonError(String body) {
    SinglePassJsonDecoderTest.Outcome a = SinglePassJsonDecoderTest.outcome(fast, TEXT, utf8(body), null);
    SinglePassJsonDecoderTest.Outcome b = SinglePassJsonDecoderTest.outcome(jackson, TEXT, utf8(body), null);
    assertThat(a).as(body).isEqualTo(b);
    assertThat(a.error()).as(body).isNotNull();
    return a.error();
  }

  static String input(String shape, String data) {
    return "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":" + shape + ",\"data\":" + data + "}]}";
  }

  @Test
  void jsonNestedAndFlatDecodeToTheSameLengthPrefixedData() {
    Tensor flat = bothJsonPaths(input("[2,2]", "[\"a\",\"\u00e9\",\"\",\"q\\\"\"]"));
    Tensor nested = bothJsonPaths(input("[2,2]", "[[\"a\",\"\u00e9\"],[\"\",\"q\\\"\"]]"));
    assertThat(nested).isEqualTo(flat);
    assertThat(flat.shape()).containsExactly(2, 2);
    assertThat(Arrays.stream(BinaryTensors.splitBytesElements(flat.data())).map(b -> new String(b, StandardCharsets.UTF_8)))
        .containsExactly("a", "\u00e9", "", "q\"");
  }

  @Test
  void jsonRefusalsNameTheInputInBothPaths() {
    assertThat(jsonError(input("[1,2]", "[\"a\",3]"))).contains("inputs[0].data element 1: expected a string for BYTES");
    assertThat(jsonError(input("[2,2]", "[[\"a\",\"b\"],[\"c\"]]"))).contains("inputs[0].data");
    assertThat(jsonError(input("[1,3]", "[\"a\",\"b\"]"))).contains("inputs[0].data: has 2 elements but shape [1, 3] needs 3");
    assertThat(jsonError("{\"inputs\":[{\"name\":\"text\",\"datatype\":\"FP32\",\"shape\":[1,1],\"data\":[1]}]}"))
        .contains("inputs[0].datatype: input 'text' is BYTES, got FP32");
  }

  byte[] binaryBody(String shape, byte[] data) {
    String header = "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":" + shape
        + ",\"parameters\":{\"binary_data_size\":" + data.length + "}}]}";
    byte[] h = utf8(header);
    byte[] body = Arrays.copyOf(h, h.length + data.length);
    System.arraycopy(data, 0, body, h.length, data.length);
    return body;
  }

  String binaryError(String shape, byte[] data) {
    byte[] body = binaryBody(shape, data);
    int headerLength = body.length - data.length;
    assertThatThrownBy(() -> fast.decode(TEXT, body, Integer.toString(headerLength)))
        .isInstanceOf(InferenceException.class);
    try {
      fast.decode(TEXT, body, Integer.toString(headerLength));
      return null;
    } catch (InferenceException e) {
      return e.getMessage();
    }
  }

  @Test
  void binaryLengthPrefixesAreCheckedAgainstTheDataAndTheShape() {
    byte[] good = BinaryTensors.joinBytesElements(List.of(utf8("hi"), new byte[0]));
    byte[] body = binaryBody("[1,2]", good);
    Tensor t = fast.decode(TEXT, body, Integer.toString(body.length - good.length)).request().request().inputs().get(0);
    assertThat(t.data()).isEqualTo(good);

    assertThat(binaryError("[1,1]", new byte[] {5, 0, 0, 0, 'a'})).contains("inputs[0]").contains("BYTES element 0 claims 5 bytes");
    assertThat(binaryError("[1,2]", new byte[] {1, 0, 0, 0, 'a', 0, 0})).contains("inputs[0]").contains("truncated 4-byte length");
    assertThat(binaryError("[1,3]", good)).contains("inputs[0]").contains("the shape needs 3");
    assertThat(binaryError("[1,1]", new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f})).contains("inputs[0]")
        .contains("BYTES element 0 claims");
    assertThat(binaryError("[100000000,1]", new byte[] {0, 0, 0, 0})).contains("inputs[0]");
  }

  static ModelInferRequest.InferInputTensor.Builder grpcInput(long... shape) {
    ModelInferRequest.InferInputTensor.Builder b = ModelInferRequest.InferInputTensor.newBuilder().setName("text")
        .setDatatype("BYTES");
    for (long d : shape) {
      b.addShape(d);
    }
    return b;
  }

  @Test
  void grpcBytesContentsAndRawContentsGiveTheSameTensor() {
    ModelInferRequest typed = ModelInferRequest.newBuilder().setModelName("text").addInputs(grpcInput(1, 2)
        .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("h\u00e9"))
            .addBytesContents(ByteString.EMPTY))).build();
    byte[] raw = BinaryTensors.joinBytesElements(List.of(utf8("h\u00e9"), new byte[0]));
    ModelInferRequest rawReq = ModelInferRequest.newBuilder().setModelName("text").addInputs(grpcInput(1, 2))
        .addRawInputContents(ByteString.copyFrom(raw)).build();
    Tensor a = GrpcCodec.decode(typed, TEXT).request().request().inputs().get(0);
    Tensor b = GrpcCodec.decode(rawReq, TEXT).request().request().inputs().get(0);
    assertThat(a).isEqualTo(b);
    assertThat(a.data()).isEqualTo(raw);
  }

  @Test
  void grpcMalformedBytesAreRefusedNamingTheInput() {
    ModelInferRequest overrun = ModelInferRequest.newBuilder().setModelName("text").addInputs(grpcInput(1, 1))
        .addRawInputContents(ByteString.copyFrom(new byte[] {9, 0, 0, 0, 'x'})).build();
    assertThatThrownBy(() -> GrpcCodec.decode(overrun, TEXT)).isInstanceOf(InferenceException.class)
        .hasMessage("raw_input_contents[0]: BYTES element 0 claims 9 bytes but only 1 remain");
    ModelInferRequest truncated = ModelInferRequest.newBuilder().setModelName("text").addInputs(grpcInput(1, 2))
        .addRawInputContents(ByteString.copyFrom(new byte[] {0, 0, 0, 0, 1, 0})).build();
    assertThatThrownBy(() -> GrpcCodec.decode(truncated, TEXT)).isInstanceOf(InferenceException.class)
        .hasMessageContaining("raw_input_contents[0]").hasMessageContaining("truncated 4-byte length");
    ModelInferRequest fewer = ModelInferRequest.newBuilder().setModelName("text").addInputs(grpcInput(1, 2)
        .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("a")))).build();
    assertThatThrownBy(() -> GrpcCodec.decode(fewer, TEXT)).isInstanceOf(InferenceException.class)
        .hasMessageContaining("inputs[0]").hasMessageContaining("has 1 elements but shape [1, 2] needs 2");
  }
}
