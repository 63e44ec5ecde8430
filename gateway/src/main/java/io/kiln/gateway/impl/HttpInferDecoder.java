package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.impl.InputPlans.InputPlan;
import io.kiln.gateway.impl.RequestHeader.InputHeader;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.netty.buffer.ByteBuf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Decodes an OIP HTTP infer body, JSON or JSON + binary tensor extension, into a validated request. Every size
 * the body declares is checked against the body itself before tensor memory is allocated, so a small body
 * cannot make the gateway allocate a large tensor. Thread-safe; CPU-bound (run big bodies off the event loop).
 */
final class HttpInferDecoder {

  static final String HEADER_LENGTH = "Inference-Header-Content-Length";

  private final JsonRequestDecoder json;
  private final JsonTensorReader reader;
  private final SinglePassJsonDecoder singlePass;
  private final SharedMemoryRegions sharedMemory;

  HttpInferDecoder(JsonRequestDecoder json) {
    this(json, true);
  }

  /** @param sharedMemory the regions inputs and outputs may name (Triton's shared-memory parameters) */
  HttpInferDecoder(JsonRequestDecoder json, SharedMemoryRegions sharedMemory) {
    this(json, true, sharedMemory);
  }

  /** @param singlePass false: always the two Jackson passes (the reference the single pass is tested against) */
  HttpInferDecoder(JsonRequestDecoder json, boolean singlePass) {
    this(json, singlePass, new SharedMemoryRegions(SharedMemoryRegions.DEFAULT_DIR, Long.MAX_VALUE));
  }

  private HttpInferDecoder(JsonRequestDecoder json, boolean singlePass, SharedMemoryRegions sharedMemory) {
    this.json = json;
    this.reader = new JsonTensorReader(json.factory());
    this.singlePass = singlePass ? new SinglePassJsonDecoder() : null;
    this.sharedMemory = sharedMemory;
  }

  /**
   * Decodes the body where Vert.x holds it: a heap buffer is read in place, anything else copied once.
   *
   * @param body the request body as Vert.x read it; null for none
   * @param headerLength the {@code Inference-Header-Content-Length} header, or null when the body is all JSON
   * @throws InferenceException kind INVALID_INPUT naming the field at fault
   */
  DecodedRequest decode(ModelInfo model, Buffer body, String headerLength) {
    if (body == null) {
      return decode(model, new byte[0], 0, 0, headerLength);
    }
    ByteBuf buf = body instanceof BufferInternal internal ? internal.getByteBuf() : null;
    if (buf != null && buf.hasArray()) {
      return decode(model, buf.array(), buf.arrayOffset() + buf.readerIndex(), buf.readableBytes(), headerLength);
    }
    byte[] bytes = body.getBytes();
    return decode(model, bytes, 0, bytes.length, headerLength);
  }

  /**
   * @param headerLength the {@code Inference-Header-Content-Length} header, or null when the body is all JSON
   * @throws InferenceException kind INVALID_INPUT naming the field at fault
   */
  DecodedRequest decode(ModelInfo model, byte[] body, String headerLength) {
    return decode(model, body, 0, body.length, headerLength);
  }

  /**
   * The body is {@code length} bytes of {@code bytes} from {@code offset}; it is not modified or kept.
   *
   * @throws InferenceException kind INVALID_INPUT naming the field at fault
   */
  DecodedRequest decode(ModelInfo model, byte[] bytes, int offset, int length, String headerLength) {
    int jsonLength = jsonLength(length, headerLength);
    // One pass over the bytes where it can; the two Jackson passes for anything else, and for every error.
    SinglePassJsonDecoder.Result fast = singlePass == null ? null : singlePass.decode(bytes, offset, jsonLength);
    RequestHeader header = fast != null ? fast.header() : json.decode(bytes, offset, jsonLength);
    InputPlans.Checked checked = InputPlans.check(header, model);
    List<InputPlan> plans = checked.plans();

    // Sizes first, allocation after: nothing below allocates more than the body already holds.
    long maxJsonElements = (jsonLength + 1L) / 2;
    boolean[] inline = new boolean[plans.size()];
    SharedMemoryTensors.Ref[] shared = null;
    long[] binaryOffsets = new long[plans.size()];
    long binaryPos = jsonLength;
    boolean anyBinary = false;
    for (InputPlan plan : plans) {
      InputHeader in = plan.header();
      String path = plan.path();
      if (in.hasData() && in.binaryDataSize() >= 0) {
        throw InferenceException.invalid(path + ": has both data and parameters.binary_data_size");
      }
      SharedMemoryTensors.Ref ref = SharedMemoryTensors.ref(in.parameters(), path);
      if (ref != null) {
        if (in.hasData() || in.binaryDataSize() >= 0) {
          throw InferenceException.invalid(path + ".parameters." + SharedMemoryTensors.REGION + ": must not be given"
              + " with " + (in.hasData() ? "data" : "parameters.binary_data_size"));
        }
        if (shared == null) {
          shared = new SharedMemoryTensors.Ref[plans.size()];
        }
        shared[plan.index()] = ref;
      } else if (in.hasData()) {
        if (plan.elementCount() > maxJsonElements) {
          throw InferenceException.invalid(path + ".shape: " + Arrays.toString(in.shape()) + " declares "
              + plan.elementCount() + " elements, more than the " + jsonLength + "-byte JSON body can hold");
        }
        inline[plan.index()] = true;
      } else if (in.binaryDataSize() >= 0) {
        anyBinary = true;
        long size = in.binaryDataSize();
        long fixed = plan.fixedByteSize();
        if (fixed >= 0 && size != fixed) {
          throw InferenceException.invalid(path + ".parameters.binary_data_size: " + size + " bytes, but "
              + plan.type() + " shape " + Arrays.toString(in.shape()) + " needs " + fixed);
        }
        if (size > length - binaryPos) {
          throw InferenceException.invalid(path + ".parameters.binary_data_size: " + size + " bytes, but only "
              + (length - binaryPos) + " bytes of binary data remain in the body");
        }
        binaryOffsets[plan.index()] = binaryPos;
        binaryPos += size;
      } else {
        throw InferenceException.invalid(path + ".data: missing (or send parameters.binary_data_size with binary data)");
      }
    }
    if (binaryPos != length) {
      throw InferenceException.invalid(HEADER_LENGTH + ": " + (length - jsonLength)
          + " bytes follow the JSON header but the inputs' binary_data_size add up to " + (binaryPos - jsonLength));
    }

    byte[][] data = fast != null ? fast.data() : reader.read(bytes, offset, jsonLength, plans, inline);
    List<Tensor> tensors = new ArrayList<>(plans.size());
    for (InputPlan plan : plans) {
      InputHeader in = plan.header();
      byte[] tensorBytes = inline[plan.index()] ? data[plan.index()] : null;
      if (shared != null && shared[plan.index()] != null) {
        tensorBytes = SharedMemoryTensors.read(sharedMemory, shared[plan.index()], plan);
      } else if (tensorBytes == null) {
        // The one copy binary data gets: a Tensor owns an exact array.
        int from = offset + (int) binaryOffsets[plan.index()];
        tensorBytes = Arrays.copyOfRange(bytes, from, from + (int) in.binaryDataSize());
        if (plan.type() == DataType.BYTES) {
          BinaryTensors.checkBytesElements(tensorBytes, plan.elementCount(), plan.path() + ".parameters.binary_data_size");
        }
      }
      tensors.add(new Tensor(in.name(), plan.type(), in.shape(), tensorBytes));
    }
    SharedMemoryTensors.checkOutputs(header.outputs(), sharedMemory);
    List<String> outputs = outputNames(header.outputs());
    InferenceRequest request = new InferenceRequest(header.id(), tensors, outputs, header.parameters());
    return new DecodedRequest(checked.finish(request), header, anyBinary);
  }

  private static List<String> outputNames(List<OutputHeader> outputs) {
    if (outputs.isEmpty()) {
      return List.of();
    }
    List<String> names = new ArrayList<>(outputs.size());
    for (OutputHeader o : outputs) {
      names.add(o.name());
    }
    return names;
  }

  private static int jsonLength(int bodyLength, String headerLength) {
    if (headerLength == null) {
      return bodyLength;
    }
    long n;
    try {
      n = Long.parseLong(headerLength.trim());
    } catch (NumberFormatException e) {
      throw InferenceException.invalid(HEADER_LENGTH + ": must be a non-negative integer, got '" + headerLength + "'");
    }
    if (n < 0 || n > bodyLength) {
      throw InferenceException.invalid(HEADER_LENGTH + ": " + n + " is outside the " + bodyLength + "-byte body");
    }
    return (int) n;
  }
}
