package io.kiln.loadtest.impl;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import io.kiln.loadtest.TensorData;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Encodes KServe {@code inference.ModelInferRequest} by hand, so the generator needs no generated code.
 * Field numbers from KServe's {@code grpc_predict_v2.proto}:
 * <pre>
 * ModelInferRequest { string model_name = 1; string model_version = 2; string id = 3; ...;
 *                     repeated InferInputTensor inputs = 5; ...; repeated bytes raw_input_contents = 7; }
 * InferInputTensor  { string name = 1; string datatype = 2; repeated int64 shape = 3; ... }
 * </pre>
 * Stateless.
 */
public final class ModelInferEncoder {
  static final int REQ_MODEL_NAME = 1;
  static final int REQ_MODEL_VERSION = 2;
  static final int REQ_INPUTS = 5;
  static final int REQ_RAW_INPUT_CONTENTS = 7;
  static final int TENSOR_NAME = 1;
  static final int TENSOR_DATATYPE = 2;
  static final int TENSOR_SHAPE = 3;

  private ModelInferEncoder() {
  }

  /** The serialized request (without gRPC framing); {@code modelVersion} may be empty. */
  public static byte[] encode(String model, String modelVersion, List<TensorData> inputs) {
    byte[][] tensors = new byte[inputs.size()][];
    int size = CodedOutputStream.computeStringSize(REQ_MODEL_NAME, model);
    if (!modelVersion.isEmpty()) {
      size += CodedOutputStream.computeStringSize(REQ_MODEL_VERSION, modelVersion);
    }
    for (int i = 0; i < tensors.length; i++) {
      tensors[i] = encodeTensor(inputs.get(i));
      size += CodedOutputStream.computeByteArraySize(REQ_INPUTS, tensors[i]);
    }
    for (TensorData t : inputs) {
      size += CodedOutputStream.computeTagSize(REQ_RAW_INPUT_CONTENTS)
          + CodedOutputStream.computeUInt32SizeNoTag(t.byteSize()) + t.byteSize();
    }
    byte[] out = new byte[size];
    CodedOutputStream cos = CodedOutputStream.newInstance(out);
    try {
      cos.writeString(REQ_MODEL_NAME, model);
      if (!modelVersion.isEmpty()) {
        cos.writeString(REQ_MODEL_VERSION, modelVersion);
      }
      for (byte[] tensor : tensors) {
        cos.writeByteArray(REQ_INPUTS, tensor);
      }
      for (TensorData t : inputs) {
        ByteBuffer raw = t.raw();
        cos.writeTag(REQ_RAW_INPUT_CONTENTS, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        cos.writeUInt32NoTag(raw.remaining());
        cos.writeRawBytes(raw);
      }
      cos.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private static byte[] encodeTensor(TensorData t) {
    long[] shape = t.shape();
    int packed = 0;
    for (long d : shape) {
      packed += CodedOutputStream.computeInt64SizeNoTag(d);
    }
    int size = CodedOutputStream.computeStringSize(TENSOR_NAME, t.name())
        + CodedOutputStream.computeStringSize(TENSOR_DATATYPE, t.datatype())
        + (shape.length == 0 ? 0
            : CodedOutputStream.computeTagSize(TENSOR_SHAPE) + CodedOutputStream.computeUInt32SizeNoTag(packed) + packed);
    byte[] out = new byte[size];
    CodedOutputStream cos = CodedOutputStream.newInstance(out);
    try {
      cos.writeString(TENSOR_NAME, t.name());
      cos.writeString(TENSOR_DATATYPE, t.datatype());
      if (shape.length > 0) {
        // proto3 packs repeated scalars by default; servers must accept both forms, we send the default.
        cos.writeTag(TENSOR_SHAPE, WireFormat.WIRETYPE_LENGTH_DELIMITED);
        cos.writeUInt32NoTag(packed);
        for (long d : shape) {
          cos.writeInt64NoTag(d);
        }
      }
      cos.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}
