package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.protocol.grpc.GRPCInferenceServiceGrpcClient;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.vertx.core.Future;
import io.vertx.grpc.common.GrpcStatus;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code raw_input_contents} and {@code raw_output_contents} through the gateway's own ModelInfer codec (the
 * parser aliases the message, each tensor is copied once): every datatype's bytes reach the pool and come back
 * unchanged, raw and typed contents are not mixed, sizes that do not match the shape are INVALID_ARGUMENT naming
 * the entry and the input, and many calls in flight on one connection are all answered (one flush per
 * event-loop turn).
 */
class GrpcRawContentsTest extends GatewayTestBase {

  private static InferInputTensor.Builder input(String name, DataType type, long... shape) {
    InferInputTensor.Builder b = InferInputTensor.newBuilder().setName(name).setDatatype(type.name());
    for (long d : shape) {
      b.addShape(d);
    }
    return b;
  }

  private GrpcResult<ModelInferResponse> infer(ModelInferRequest req) {
    return call(GRPCInferenceServiceGrpcClient.ModelInfer, req);
  }

  /** Three elements of {@code type} as little-endian raw bytes, with values at the type's edges. */
  private static byte[] raw(DataType type) {
    if (type == DataType.BYTES) {
      return bytesElements("héllo", "", "x");
    }
    ByteBuffer b = ByteBuffer.allocate(3 * type.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < 3; i++) {
      switch (type) {
        case BOOL -> b.put((byte) (i % 2));
        case INT8, UINT8 -> b.put((byte) (i == 0 ? 0x80 : i == 1 ? 0x7f : 0xff));
        case INT16, UINT16, FP16, BF16 -> b.putShort((short) (i == 0 ? 0x3c00 : i == 1 ? 0x8001 : 0xffff));
        case INT32, UINT32 -> b.putInt(i == 0 ? Integer.MIN_VALUE : i == 1 ? Integer.MAX_VALUE : -1);
        case INT64, UINT64 -> b.putLong(i == 0 ? Long.MIN_VALUE : i == 1 ? Long.MAX_VALUE : -1L);
        case FP32 -> b.putFloat(i == 0 ? 0.5f : i == 1 ? -1e30f : Float.MIN_VALUE);
        case FP64 -> b.putDouble(i == 0 ? 1e300 : i == 1 ? -0.1 : Double.MIN_VALUE);
        default -> throw new IllegalStateException(type.name());
      }
    }
    return b.array();
  }

  private static byte[] bytesElements(String... elements) {
    List<byte[]> parts = new ArrayList<>();
    int size = 0;
    for (String e : elements) {
      byte[] p = e.getBytes(StandardCharsets.UTF_8);
      parts.add(p);
      size += 4 + p.length;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    for (byte[] p : parts) {
      b.putInt(p.length).put(p);
    }
    return b.array();
  }

  @Test
  void rawContentsOfEveryDatatypeReachThePoolAndComeBackUnchanged() {
    for (DataType type : DataType.values()) {
      byte[] data = raw(type);
      ModelInferRequest req = ModelInferRequest.newBuilder().setModelName(TestModels.identity(type)).setId("r-" + type)
          .addInputs(input("x", type, 3)).addRawInputContents(ByteString.copyFrom(data)).build();
      GrpcResult<ModelInferResponse> r = infer(req);
      assertThat(r.status()).as(type + ": " + r.message()).isEqualTo(GrpcStatus.OK);
      assertThat(cluster.last().request().inputs().get(0)).as(type.name())
          .isEqualTo(new Tensor("x", type, new long[] {3}, data));
      ModelInferResponse body = r.body();
      assertThat(body.getId()).isEqualTo("r-" + type);
      assertThat(body.getOutputs(0).getDatatype()).isEqualTo(type.name());
      assertThat(body.getOutputs(0).getShapeList()).containsExactly(3L);
      assertThat(body.getOutputs(0).hasContents()).isFalse();
      byte[] expected = type == DataType.FP32 ? doubled(data) : data; // the test cluster doubles FP32
      assertThat(body.getRawOutputContentsList()).as(type.name()).containsExactly(ByteString.copyFrom(expected));
    }
  }

  private static byte[] doubled(byte[] floats) {
    ByteBuffer in = ByteBuffer.wrap(floats).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = ByteBuffer.allocate(floats.length).order(ByteOrder.LITTLE_ENDIAN);
    while (in.hasRemaining()) {
      out.putFloat(2 * in.getFloat());
    }
    return out.array();
  }

  @Test
  void twoRawInputsOfDifferentTypesEachKeepTheirOwnBytes() {
    byte[] ints = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(7).putInt(-9).array();
    byte[] strings = bytesElements("ab");
    GrpcResult<ModelInferResponse> r = infer(ModelInferRequest.newBuilder().setModelName(TestModels.PAIR)
        .addInputs(input("a", DataType.INT32, 1, 2)).addInputs(input("b", DataType.BYTES, 1))
        .addRawInputContents(ByteString.copyFrom(ints)).addRawInputContents(ByteString.copyFrom(strings)).build());
    assertThat(r.status()).as(r.message()).isEqualTo(GrpcStatus.OK);
    assertThat(r.body().getRawOutputContentsList())
        .containsExactly(ByteString.copyFrom(ints), ByteString.copyFrom(strings));
  }

  @Test
  void rawAndTypedContentsInOneRequestAreRefused() {
    GrpcResult<ModelInferResponse> r = infer(ModelInferRequest.newBuilder().setModelName(TestModels.PAIR)
        .addInputs(input("a", DataType.INT32, 1, 2))
        .addInputs(input("b", DataType.BYTES, 1)
            .setContents(InferTensorContents.newBuilder().addBytesContents(ByteString.copyFromUtf8("ab"))))
        .addRawInputContents(ByteString.copyFrom(new byte[8])).addRawInputContents(ByteString.copyFrom(bytesElements("ab")))
        .build());
    assertThat(r.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(r.message()).isEqualTo("inputs[1].contents: must not be set when raw_input_contents is used");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void rawSizesThatDoNotMatchTheShapeAreInvalidArgumentNamingTheInput() {
    for (DataType type : DataType.values()) {
      if (type == DataType.BYTES) {
        continue;
      }
      byte[] data = raw(type); // three elements, the shape says four
      GrpcResult<ModelInferResponse> r = infer(ModelInferRequest.newBuilder().setModelName(TestModels.identity(type))
          .addInputs(input("x", type, 4)).addRawInputContents(ByteString.copyFrom(data)).build());
      assertThat(r.status()).as(type.name()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
      assertThat(r.message()).as(type.name()).isEqualTo("raw_input_contents[0]: " + data.length + " bytes, but " + type
          + " shape [4] of input 'x' needs " + 4 * type.byteSize());
    }
    GrpcResult<ModelInferResponse> fewer = infer(ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.BYTES))
        .addInputs(input("x", DataType.BYTES, 4)).addRawInputContents(ByteString.copyFrom(raw(DataType.BYTES))).build());
    assertThat(fewer.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(fewer.message()).isEqualTo("raw_input_contents[0]: has 3 BYTES elements but the shape needs 4");
    byte[] truncated = bytesElements("hello");
    GrpcResult<ModelInferResponse> lies = infer(ModelInferRequest.newBuilder().setModelName(TestModels.identity(DataType.BYTES))
        .addInputs(input("x", DataType.BYTES, 1))
        .addRawInputContents(ByteString.copyFrom(truncated, 0, truncated.length - 1)).build());
    assertThat(lies.status()).isEqualTo(GrpcStatus.INVALID_ARGUMENT);
    assertThat(lies.message()).isEqualTo("raw_input_contents[0]: BYTES element 0 claims 5 bytes but only 4 remain");
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void manyCallsInFlightOnOneConnectionAreAllAnswered() {
    List<Future<ModelInferResponse>> calls = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putFloat(i).putFloat(1).putFloat(2).putFloat(3);
      calls.add(grpc.modelInfer(ModelInferRequest.newBuilder().setModelName(TestModels.MLP).setId("c-" + i)
          .addInputs(input("input", DataType.FP32, 1, 4)).addRawInputContents(ByteString.copyFrom(b.array())).build()));
    }
    for (int i = 0; i < calls.size(); i++) {
      ModelInferResponse r = join(calls.get(i));
      assertThat(r.getId()).isEqualTo("c-" + i);
      ByteBuffer out = r.getRawOutputContents(0).asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
      assertThat(out.getFloat()).isEqualTo(2f * i);
    }
  }
}
