package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.ModelInferResponse;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The ModelInfer response as the gateway serialises it, its raw output contents appended without a copy, is byte for
 * byte what protobuf's own {@code toByteArray} writes (so every client parses it as before), for several outputs
 * of megabytes, for an empty one, and for small responses that take the one-array path; and the frame GrpcDirectInfer
 * writes is the 5-byte gRPC prefix and those bytes, the tensor's array referenced, not copied.
 */
class GrpcWireSerializeTest {

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static ModelInferResponse response(byte[]... raw) {
    ModelInferResponse.Builder b = ModelInferResponse.newBuilder().setModelName("rec").setModelVersion("1").setId("r-1")
        .putParameters("sequence_id", InferParameter.newBuilder().setInt64Param(7).build());
    for (int i = 0; i < raw.length; i++) {
      b.addOutputs(ModelInferResponse.InferOutputTensor.newBuilder().setName("o" + i).setDatatype("FP32")
          .addShape(raw[i].length / 4));
      b.addRawOutputContents(UnsafeByteOperations.unsafeWrap(raw[i]));
    }
    return b.build();
  }

  @Test
  void multiMegabyteRawOutputsSerialiseExactlyAsProtobufDoes() throws Exception {
    ModelInferResponse r = response(random(8_480_000, 1), new byte[0], random(3 * 1024 * 1024 + 4, 2));
    assertThat(GrpcWire.serialize(r).getBytes()).isEqualTo(r.toByteArray());
    assertThat(ModelInferResponse.parseFrom(GrpcWire.serialize(r).getBytes()).getRawOutputContents(2))
        .isEqualTo(ByteString.copyFrom(r.getRawOutputContents(2).toByteArray()));
  }

  @Test
  void smallResponsesSerialiseExactlyAsProtobufDoes() {
    ModelInferResponse r = response(random(16, 3));
    assertThat(GrpcWire.serialize(r).getBytes()).isEqualTo(r.toByteArray());
    assertThat(GrpcWire.serialize(ModelInferResponse.getDefaultInstance()).getBytes()).isEmpty();
  }

  @Test
  void aFrameIsTheFiveBytePrefixAndTheMessageAndSharesTheTensorsArrays() {
    byte[] tensor = random(8_480_000, 4);
    ModelInferResponse r = response(tensor);
    io.vertx.core.buffer.Buffer frame = GrpcWire.frame(r);
    byte[] message = r.toByteArray();
    assertThat(frame.length()).isEqualTo(5 + message.length);
    assertThat(frame.getByte(0)).isZero(); // not compressed
    assertThat(frame.getInt(1)).isEqualTo(message.length); // big-endian length
    assertThat(frame.getBytes(5, frame.length())).isEqualTo(message);
    // The tensor is referenced, not copied: a change to its array shows in the frame.
    tensor[tensor.length - 1] ^= 0x5a;
    assertThat(frame.getByte(frame.length() - 1)).isEqualTo(tensor[tensor.length - 1]);
    assertThat(GrpcWire.frame(ModelInferResponse.getDefaultInstance()).getBytes()).isEqualTo(new byte[5]);
  }
}
