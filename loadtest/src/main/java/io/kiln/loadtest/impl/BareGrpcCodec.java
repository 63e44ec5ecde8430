package io.kiln.loadtest.impl;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelInferResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * The bare gRPC baseline's own work per {@code ModelInfer}: every input decoded into a {@code float[]} (from
 * {@code raw_input_contents}, little-endian, or from {@code contents.fp32_contents}), shapes checked against the
 * data, and an answer of one FP32 output {@code output} in {@code raw_output_contents}: for model
 * {@link BareOipCodec#ECHO} the first input (its shape and values, as {@code builtin:identity} answers), for any other
 * [1, 10] (the first input's first values, zero-padded). What Kiln's gRPC front end does per request, minus everything
 * behind it.
 * Only FP32 inputs. Stateless.
 */
public final class BareGrpcCodec {
  private static final List<Long> OUTPUT_SHAPE = List.of(1L, (long) BareOipCodec.OUTPUT_SIZE);

  private BareGrpcCodec() {
  }

  /**
   * @throws IllegalArgumentException naming the field at fault (for an INVALID_ARGUMENT status)
   */
  public static ModelInferResponse answer(ModelInferRequest req) {
    int n = req.getInputsCount();
    check(n > 0, "inputs: missing");
    boolean raw = req.getRawInputContentsCount() > 0;
    check(!raw || req.getRawInputContentsCount() == n,
        "raw_input_contents: " + req.getRawInputContentsCount() + " entries for " + n + " inputs");
    float[] first = null;
    for (int i = 0; i < n; i++) {
      float[] data = input(req, i, raw);
      if (i == 0) {
        first = data;
      }
    }
    boolean echo = BareOipCodec.ECHO.equals(req.getModelName());
    float[] values = echo ? first : Arrays.copyOf(first, BareOipCodec.OUTPUT_SIZE);
    ByteBuffer out = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    out.asFloatBuffer().put(values);
    return ModelInferResponse.newBuilder()
        .setModelName(req.getModelName())
        .setModelVersion(req.getModelVersion())
        .setId(req.getId())
        .addOutputs(ModelInferResponse.InferOutputTensor.newBuilder().setName("output").setDatatype("FP32")
            .addAllShape(echo ? req.getInputs(0).getShapeList() : OUTPUT_SHAPE))
        .addRawOutputContents(UnsafeByteOperations.unsafeWrap(out.array()))
        .build();
  }

  private static float[] input(ModelInferRequest req, int i, boolean raw) {
    InferInputTensor t = req.getInputs(i);
    String path = "inputs[" + i + "]";
    check(!t.getName().isEmpty(), path + ".name: missing");
    check(t.getDatatype().equals("FP32"), path + ".datatype: '" + t.getDatatype() + "' is not FP32 (the bare server takes FP32 only)");
    long elements = 1;
    for (long d : t.getShapeList()) {
      check(d >= 0, path + ".shape: negative dimension in " + t.getShapeList());
      elements *= d;
      check(elements <= Integer.MAX_VALUE / 4, path + ".shape: " + t.getShapeList() + " is too large");
    }
    if (raw) {
      check(!t.hasContents(), path + ".contents: must not be set when raw_input_contents is used");
      ByteString bytes = req.getRawInputContents(i);
      check(bytes.size() == elements * 4, "raw_input_contents[" + i + "]: " + bytes.size() + " bytes, but FP32 shape "
          + t.getShapeList() + " needs " + elements * 4);
      float[] data = new float[(int) elements];
      bytes.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(data);
      return data;
    }
    check(t.getContents().getFp32ContentsCount() == elements, path + ".contents.fp32_contents: has "
        + t.getContents().getFp32ContentsCount() + " elements but shape " + t.getShapeList() + " needs " + elements);
    float[] data = new float[(int) elements];
    for (int k = 0; k < data.length; k++) {
      data[k] = t.getContents().getFp32Contents(k);
    }
    return data;
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException(message);
    }
  }
}
