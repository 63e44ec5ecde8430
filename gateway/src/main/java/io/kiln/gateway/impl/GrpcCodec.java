package io.kiln.gateway.impl;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.kiln.gateway.ModelInfo;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.InferTensorContents;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.kiln.protocol.grpc.ModelInferRequest.InferRequestedOutputTensor;
import io.kiln.protocol.grpc.ModelInferResponse;
import io.kiln.protocol.grpc.ModelInferResponse.InferOutputTensor;
import io.kiln.protocol.grpc.ModelMetadataResponse;
import io.kiln.gateway.impl.InputPlans.InputPlan;
import io.kiln.gateway.impl.RequestHeader.InputHeader;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Converts between KServe's gRPC messages and Kiln's requests and responses: typed {@code contents} and
 * {@code raw_input_contents} in, typed {@code contents} or {@code raw_output_contents} out. Validation is the
 * same as for HTTP ({@link InputPlans}); the message size was already bounded by the gRPC server.
 * Stateless.
 */
final class GrpcCodec {

  private GrpcCodec() {
  }

  /**
   * @throws InferenceException kind INVALID_INPUT naming the field at fault
   */
  static DecodedRequest decode(ModelInferRequest req, ModelInfo model) {
    return decode(req, model, null);
  }

  /**
   * @param sharedMemory the regions inputs and outputs may name (Triton's shared-memory parameters); null for none
   * @throws InferenceException kind INVALID_INPUT naming the field at fault
   */
  static DecodedRequest decode(ModelInferRequest req, ModelInfo model, SharedMemoryRegions sharedMemory) {
    List<InputHeader> inputs = new ArrayList<>(req.getInputsCount());
    for (int i = 0; i < req.getInputsCount(); i++) {
      InferInputTensor t = req.getInputs(i);
      long[] shape = new long[t.getShapeCount()];
      for (int d = 0; d < shape.length; d++) {
        shape[d] = t.getShape(d);
      }
      inputs.add(new InputHeader(t.getName(), t.getDatatype(), shape,
          parameters(t.getParametersMap()), -1, t.hasContents()));
    }
    List<OutputHeader> outputs = new ArrayList<>(req.getOutputsCount());
    for (int i = 0; i < req.getOutputsCount(); i++) {
      InferRequestedOutputTensor o = req.getOutputs(i);
      Map<String, Object> params = parameters(o.getParametersMap());
      outputs.add(new OutputHeader(o.getName(), Fields.bool(params, Fields.BINARY_DATA, Fields.outputPath(i) + ".parameters"),
          params));
    }
    RequestHeader header = new RequestHeader(req.getId(), parameters(req.getParametersMap()), inputs, outputs);
    InputPlans.Checked checked = InputPlans.check(header, model);
    List<InputPlan> plans = checked.plans();
    boolean raw = req.getRawInputContentsCount() > 0;
    // Inputs in shared memory take no raw_input_contents entry: the others take theirs in request order.
    SharedMemoryTensors.Ref[] shared = sharedMemory == null ? null : sharedInputs(plans);
    int inMessage = plans.size() - count(shared);
    if (raw && req.getRawInputContentsCount() != inMessage) {
      throw InferenceException.invalid("raw_input_contents: " + req.getRawInputContentsCount() + " entries for "
          + inMessage + " inputs" + (inMessage == plans.size() ? "" : " not in shared memory"));
    }
    int[] rawIndex = shared == null ? null : rawIndices(plans, shared);
    List<Tensor> tensors = new ArrayList<>(plans.size());
    for (InputPlan plan : plans) {
      InputHeader in = plan.header();
      byte[] data;
      SharedMemoryTensors.Ref ref = shared == null ? null : shared[plan.index()];
      if (ref != null) {
        if (in.hasData()) {
          throw InferenceException.invalid(plan.path() + ".contents: must not be set with parameters."
              + SharedMemoryTensors.REGION);
        }
        data = SharedMemoryTensors.read(sharedMemory, ref, plan);
      } else if (raw && rawIndex != null) {
        if (in.hasData()) {
          throw InferenceException.invalid(plan.path() + ".contents: must not be set when raw_input_contents is used");
        }
        data = rawInput(req.getRawInputContents(rawIndex[plan.index()]), plan);
      } else if (raw) {
        if (in.hasData()) {
          throw InferenceException.invalid(plan.path() + ".contents: must not be set when raw_input_contents is used");
        }
        data = rawInput(req.getRawInputContents(plan.index()), plan);
      } else {
        data = typedInput(req.getInputs(plan.index()).getContents(), plan);
      }
      tensors.add(new Tensor(in.name(), plan.type(), in.shape(), data));
    }
    if (sharedMemory != null) {
      SharedMemoryTensors.checkOutputs(outputs, sharedMemory);
    }
    List<String> outputNames = new ArrayList<>(outputs.size());
    for (OutputHeader o : outputs) {
      outputNames.add(o.name());
    }
    InferenceRequest request = new InferenceRequest(header.id(), tensors, outputNames, header.parameters());
    return new DecodedRequest(checked.finish(request), header, raw);
  }

  /** Each input's shared-memory window (by input index), or null when no input names one. */
  private static SharedMemoryTensors.Ref[] sharedInputs(List<InputPlan> plans) {
    SharedMemoryTensors.Ref[] refs = null;
    for (InputPlan plan : plans) {
      SharedMemoryTensors.Ref ref = SharedMemoryTensors.ref(plan.header().parameters(), plan.path());
      if (ref != null) {
        if (refs == null) {
          refs = new SharedMemoryTensors.Ref[plans.size()];
        }
        refs[plan.index()] = ref;
      }
    }
    return refs;
  }

  private static int count(Object[] refs) {
    int n = 0;
    if (refs != null) {
      for (Object r : refs) {
        n += r == null ? 0 : 1;
      }
    }
    return n;
  }

  /** The raw_input_contents entry of each input not in shared memory, by input index. */
  private static int[] rawIndices(List<InputPlan> plans, SharedMemoryTensors.Ref[] shared) {
    int[] index = new int[plans.size()];
    int next = 0;
    for (int i = 0; i < plans.size(); i++) {
      index[i] = shared[i] == null ? next++ : -1;
    }
    return index;
  }

  /**
   * Raw output contents when the client sent raw inputs or asked for binary outputs, and always for FP16 and
   * BF16 (which have no typed field); typed contents otherwise.
   */
  static ModelInferResponse encode(InferenceResponse r, DecodedRequest decoded) {
    return encode(r, decoded, Map.of());
  }

  /**
   * As {@link #encode(InferenceResponse, DecodedRequest)}, first writing the outputs the request asked for in shared
   * memory into their regions: those carry shape, datatype and their window in parameters, no contents (an empty
   * {@code raw_output_contents} entry keeps the others' positions).
   *
   * @throws InferenceException INVALID_INPUT naming the field when an output does not fit its window
   */
  static ModelInferResponse encode(InferenceResponse r, DecodedRequest decoded, SharedMemoryRegions sharedMemory) {
    return encode(r, decoded, SharedMemoryTensors.write(r, decoded.header().outputs(), sharedMemory));
  }

  private static ModelInferResponse encode(InferenceResponse r, DecodedRequest decoded,
                                           Map<String, SharedMemoryTensors.Written> shared) {
    Predicate<String> binary = decoded.header().binaryOutputs();
    boolean raw = decoded.rawInputs();
    for (Tensor t : r.outputs()) {
      raw |= binary.test(t.name()) || t.datatype() == DataType.FP16 || t.datatype() == DataType.BF16;
    }
    ModelInferResponse.Builder b = ModelInferResponse.newBuilder()
        .setModelName(r.modelName())
        .setModelVersion(r.modelVersion())
        .setId(r.id());
    r.parameters().forEach((k, v) -> b.putParameters(k, parameter(v)));
    for (Tensor t : r.outputs()) {
      InferOutputTensor.Builder o = InferOutputTensor.newBuilder()
          .setName(t.name())
          .setDatatype(t.datatype().name());
      for (long d : t.shape()) {
        o.addShape(d);
      }
      SharedMemoryTensors.Written inShared = shared.get(t.name());
      if (inShared != null) {
        o.putParameters(SharedMemoryTensors.REGION, parameter(inShared.region()));
        o.putParameters(SharedMemoryTensors.BYTE_SIZE, parameter(inShared.byteSize()));
        if (raw) {
          b.addRawOutputContents(ByteString.EMPTY);
        }
      } else if (raw) {
        // Tensor bytes are immutable by contract, so wrapping without a copy is safe.
        b.addRawOutputContents(UnsafeByteOperations.unsafeWrap(t.data()));
      } else {
        o.setContents(typedOutput(t));
      }
      b.addOutputs(o);
    }
    return b.build();
  }

  static ModelMetadataResponse metadata(ModelInfo m) {
    ModelMetadataResponse.Builder b = ModelMetadataResponse.newBuilder()
        .setName(m.name())
        .addAllVersions(m.versions())
        .setPlatform(m.platform());
    for (TensorSpec s : m.inputs()) {
      b.addInputs(tensorMetadata(s));
    }
    for (TensorSpec s : m.outputs()) {
      b.addOutputs(tensorMetadata(s));
    }
    return b.build();
  }

  private static ModelMetadataResponse.TensorMetadata tensorMetadata(TensorSpec s) {
    ModelMetadataResponse.TensorMetadata.Builder b = ModelMetadataResponse.TensorMetadata.newBuilder()
        .setName(s.name())
        .setDatatype(s.datatype().name());
    for (long d : s.shape()) {
      b.addShape(d);
    }
    return b.build();
  }

  private static byte[] rawInput(ByteString bytes, InputPlan plan) {
    String where = "raw_input_contents[" + plan.index() + "]";
    long fixed = plan.fixedByteSize();
    if (fixed >= 0 && bytes.size() != fixed) {
      throw InferenceException.invalid(where + ": " + bytes.size() + " bytes, but " + plan.type() + " shape "
          + Arrays.toString(plan.header().shape()) + " of input '" + plan.header().name() + "' needs " + fixed);
    }
    byte[] data = bytes.toByteArray();
    if (fixed < 0) {
      BinaryTensors.checkBytesElements(data, plan.elementCount(), where);
    }
    return data;
  }

  private static byte[] typedInput(InferTensorContents c, InputPlan plan) {
    DataType type = plan.type();
    String path = plan.path() + ".contents";
    int total = c.getBoolContentsCount() + c.getIntContentsCount() + c.getInt64ContentsCount()
        + c.getUintContentsCount() + c.getUint64ContentsCount() + c.getFp32ContentsCount()
        + c.getFp64ContentsCount() + c.getBytesContentsCount();
    int n = switch (type) {
      case BOOL -> c.getBoolContentsCount();
      case INT8, INT16, INT32 -> c.getIntContentsCount();
      case INT64 -> c.getInt64ContentsCount();
      case UINT8, UINT16, UINT32 -> c.getUintContentsCount();
      case UINT64 -> c.getUint64ContentsCount();
      case FP32 -> c.getFp32ContentsCount();
      case FP64 -> c.getFp64ContentsCount();
      case BYTES -> c.getBytesContentsCount();
      case FP16, BF16 -> throw InferenceException.invalid(path + ": " + type
          + " has no typed field; send it in raw_input_contents");
    };
    if (n != total) {
      throw InferenceException.invalid(path + ": " + type + " elements must be in " + typedField(type)
          + ", found elements in other fields");
    }
    if (n != plan.elementCount()) {
      throw InferenceException.invalid(path + ": has " + n + " elements but shape "
          + Arrays.toString(plan.header().shape()) + " needs " + plan.elementCount());
    }
    if (type == DataType.BYTES) {
      List<byte[]> elements = new ArrayList<>(n);
      for (ByteString s : c.getBytesContentsList()) {
        elements.add(s.toByteArray());
      }
      return BinaryTensors.joinBytesElements(elements);
    }
    ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(plan.fixedByteSize())).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      String where = path + " element " + i;
      switch (type) {
        case BOOL -> Elements.putBool(out, c.getBoolContents(i));
        case INT8, INT16, INT32 -> Elements.putInteger(out, type, c.getIntContents(i), where);
        case INT64 -> out.putLong(c.getInt64Contents(i));
        case UINT8, UINT16, UINT32 -> Elements.putInteger(out, type, Integer.toUnsignedLong(c.getUintContents(i)), where);
        case UINT64 -> out.putLong(c.getUint64Contents(i));
        case FP32 -> out.putFloat(c.getFp32Contents(i));
        case FP64 -> out.putDouble(c.getFp64Contents(i));
        default -> throw new IllegalStateException("unreachable: " + type);
      }
    }
    return out.array();
  }

  private static String typedField(DataType type) {
    return switch (type) {
      case BOOL -> "bool_contents";
      case INT8, INT16, INT32 -> "int_contents";
      case INT64 -> "int64_contents";
      case UINT8, UINT16, UINT32 -> "uint_contents";
      case UINT64 -> "uint64_contents";
      case FP32 -> "fp32_contents";
      case FP64 -> "fp64_contents";
      case BYTES -> "bytes_contents";
      case FP16, BF16 -> "raw_input_contents";
    };
  }

  private static InferTensorContents typedOutput(Tensor t) {
    InferTensorContents.Builder c = InferTensorContents.newBuilder();
    DataType type = t.datatype();
    if (type == DataType.BYTES) {
      for (byte[] e : BinaryTensors.splitBytesElements(t.data())) {
        c.addBytesContents(UnsafeByteOperations.unsafeWrap(e));
      }
      return c.build();
    }
    ByteBuffer in = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    int n = t.data().length / type.byteSize();
    for (int i = 0; i < n; i++) {
      switch (type) {
        case BOOL -> c.addBoolContents(in.get() != 0);
        case INT8, INT16, INT32 -> c.addIntContents((int) Elements.getInteger(in, type));
        case INT64 -> c.addInt64Contents(in.getLong());
        case UINT8, UINT16, UINT32 -> c.addUintContents((int) Elements.getInteger(in, type));
        case UINT64 -> c.addUint64Contents(in.getLong());
        case FP32 -> c.addFp32Contents(in.getFloat());
        case FP64 -> c.addFp64Contents(in.getDouble());
        default -> throw new IllegalStateException(type + " outputs are always sent raw");
      }
    }
    return c.build();
  }

  static Map<String, Object> parameters(Map<String, InferParameter> params) {
    if (params.isEmpty()) {
      return Map.of();
    }
    Map<String, Object> out = new LinkedHashMap<>();
    params.forEach((k, p) -> {
      switch (p.getParameterChoiceCase()) {
        case BOOL_PARAM -> out.put(k, p.getBoolParam());
        case INT64_PARAM -> out.put(k, p.getInt64Param());
        case STRING_PARAM -> out.put(k, p.getStringParam());
        case DOUBLE_PARAM -> out.put(k, p.getDoubleParam());
        case UINT64_PARAM -> {
          long v = p.getUint64Param();
          out.put(k, v >= 0 ? (Object) v : new BigInteger(Long.toUnsignedString(v)));
        }
        case PARAMETERCHOICE_NOT_SET -> {
          // A parameter without a value says nothing; drop it.
        }
      }
    });
    return out;
  }

  static InferParameter parameter(Object v) {
    InferParameter.Builder b = InferParameter.newBuilder();
    if (v instanceof Boolean x) {
      b.setBoolParam(x);
    } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
      b.setInt64Param(((Number) v).longValue());
    } else if (v instanceof BigInteger x && x.signum() >= 0 && x.bitLength() <= 64) {
      b.setUint64Param(x.longValue());
    } else if (v instanceof Float || v instanceof Double) {
      b.setDoubleParam(((Number) v).doubleValue());
    } else {
      b.setStringParam(String.valueOf(v));
    }
    return b.build();
  }
}
