package io.kiln.gateway.impl;

import io.kiln.gateway.impl.InputPlans.InputPlan;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.netty.buffer.ByteBuf;
import io.vertx.core.internal.buffer.BufferInternal;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tensors passed by reference to a registered shared-memory region (Triton's shared-memory parameters on an input or
 * a requested output, over HTTP and gRPC alike): an input's bytes are read from its window, a requested output's
 * written into its window, and the response then names the output's shape and datatype with no data. Stateless.
 */
final class SharedMemoryTensors {

  static final String REGION = "shared_memory_region";
  static final String BYTE_SIZE = "shared_memory_byte_size";
  static final String OFFSET = "shared_memory_offset";

  private SharedMemoryTensors() {
  }

  /** A tensor's window: {@code byteSize} bytes at {@code offset} of region {@code region}. */
  record Ref(String region, long offset, long byteSize) {
  }

  /** An output written into a region: what the response says about it instead of its data. */
  record Written(String region, long byteSize) {
  }

  /**
   * The window a tensor's parameters name, or null when they name none.
   *
   * @param path the tensor's path, e.g. {@code inputs[0]}
   * @throws InferenceException INVALID_INPUT naming the parameter: region without byte size or the reverse, a value
   *     of the wrong type
   */
  static Ref ref(Map<String, Object> params, String path) {
    if (params.isEmpty() || !(params.containsKey(REGION) || params.containsKey(BYTE_SIZE)
        || params.containsKey(OFFSET))) {
      return null;
    }
    String where = path + ".parameters";
    String region = Fields.string(params, REGION, where);
    long size = Fields.nonNegativeLong(params, BYTE_SIZE, where);
    long offset = Fields.nonNegativeLong(params, OFFSET, where);
    if (region == null) {
      throw InferenceException.invalid(where + "." + REGION + ": missing (" + BYTE_SIZE + " or " + OFFSET
          + " is given)");
    }
    if (size < 0) {
      throw InferenceException.invalid(where + "." + BYTE_SIZE + ": missing (" + REGION + " is given)");
    }
    return new Ref(region, Math.max(offset, 0), size);
  }

  /**
   * An input's bytes, copied out of its region.
   *
   * @throws InferenceException INVALID_INPUT naming the field: a size the shape does not need, a window outside
   *     the region, an unknown region; TOO_LARGE over the input limit
   */
  static byte[] read(SharedMemoryRegions regions, Ref ref, InputPlan plan) {
    String where = plan.path() + ".parameters";
    long fixed = plan.fixedByteSize();
    if (fixed >= 0 && ref.byteSize() != fixed) {
      throw InferenceException.invalid(where + "." + BYTE_SIZE + ": " + ref.byteSize() + " bytes, but "
          + plan.type() + " shape " + Arrays.toString(plan.header().shape()) + " needs " + fixed);
    }
    if (ref.byteSize() > regions.maxTensorBytes()) {
      throw new InferenceException(InferenceException.Kind.TOO_LARGE, where + "." + BYTE_SIZE + ": "
          + ref.byteSize() + " bytes exceeds the limit of " + regions.maxTensorBytes() + " bytes");
    }
    byte[] data;
    try (SharedMemoryRegions.Lease lease = regions.lease(ref.region(), ref.offset(), ref.byteSize(), where)) {
      data = lease.read();
    }
    if (plan.type() == DataType.BYTES) {
      BinaryTensors.checkBytesElements(data, plan.elementCount(), where + "." + BYTE_SIZE);
    }
    return data;
  }

  /**
   * Whether any requested output names a region; checks each such window exists now, so a bad one fails before the
   * model runs (it is looked up again when the output is written: the region may go meanwhile).
   *
   * @throws InferenceException INVALID_INPUT naming the field
   */
  static boolean checkOutputs(List<OutputHeader> outputs, SharedMemoryRegions regions) {
    boolean any = false;
    for (int i = 0; i < outputs.size(); i++) {
      String path = Fields.outputPath(i);
      Ref ref = ref(outputs.get(i).parameters(), path);
      if (ref != null) {
        any = true;
        regions.lease(ref.region(), ref.offset(), ref.byteSize(), path + ".parameters").close();
      }
    }
    return any;
  }

  /**
   * Writes each output the request asked for in shared memory into its window.
   *
   * @return the outputs written, by name (empty when none was asked for)
   * @throws InferenceException INVALID_INPUT naming the field: an output larger than its window, a region gone
   */
  static Map<String, Written> write(InferenceResponse response, List<OutputHeader> outputs,
                                    SharedMemoryRegions regions) {
    Map<String, Written> written = null;
    for (int i = 0; i < outputs.size(); i++) {
      OutputHeader o = outputs.get(i);
      String path = Fields.outputPath(i) + ".parameters";
      Ref ref = ref(o.parameters(), Fields.outputPath(i));
      if (ref == null) {
        continue;
      }
      Tensor t = find(response, o.name());
      if (t == null) {
        continue;
      }
      byte[] data = t.data();
      if (data.length > ref.byteSize()) {
        throw InferenceException.invalid(path + "." + BYTE_SIZE + ": output '" + o.name() + "' has " + data.length
            + " bytes (shape " + Arrays.toString(t.shape()) + "), more than the " + ref.byteSize() + " given");
      }
      try (SharedMemoryRegions.Lease lease = regions.lease(ref.region(), ref.offset(), data.length, path)) {
        lease.write(data);
      }
      if (written == null) {
        written = new LinkedHashMap<>();
      }
      written.put(o.name(), new Written(ref.region(), data.length));
    }
    return written == null ? Map.of() : written;
  }

  private static final byte[] REGION_BYTES = REGION.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  private static final int ANCHOR = REGION.indexOf('_');

  /**
   * Whether a small body may name a region: then its decoding, which copies the inputs out of their regions, runs off
   * the event loop like a large body's (a false positive only costs that hop). Scans the body's own array where Vert.x
   * read it into one (through {@code Buffer.getByte} every byte checked the buffer's reference count).
   */
  static boolean mayReference(io.vertx.core.buffer.Buffer body) {
    if (body == null) {
      return false;
    }
    ByteBuf buf = body instanceof BufferInternal internal ? internal.getByteBuf() : null;
    if (buf != null && buf.hasArray()) {
      return mayReference(buf.array(), buf.arrayOffset() + buf.readerIndex(), buf.readableBytes());
    }
    byte[] bytes = body.getBytes();
    return mayReference(bytes, 0, bytes.length);
  }

  /**
   * Whether {@code length} bytes of {@code bytes} from {@code offset} hold the parameter's name: looked for at each
   * {@code '_'} (its first is the name's 7th byte), rarer in an OIP body than the name's first byte ('s' of "shape",
   * "inputs"): ~100 ns for identity's 500-byte request against ~470 through {@code Buffer.getByte}.
   */
  static boolean mayReference(byte[] bytes, int offset, int length) {
    int n = REGION_BYTES.length;
    for (int i = offset + ANCHOR, last = offset + length - n + ANCHOR; i <= last; i++) {
      if (bytes[i] == '_' && Arrays.equals(bytes, i - ANCHOR, i - ANCHOR + n, REGION_BYTES, 0, n)) {
        return true;
      }
    }
    return false;
  }

  /** Whether a gRPC request names a region on an input (see {@link #mayReference(io.vertx.core.buffer.Buffer)}). */
  static boolean mayReference(io.kiln.protocol.grpc.ModelInferRequest req) {
    for (int i = 0; i < req.getInputsCount(); i++) {
      if (req.getInputs(i).containsParameters(REGION)) {
        return true;
      }
    }
    return false;
  }

  private static Tensor find(InferenceResponse response, String name) {
    for (Tensor t : response.outputs()) {
      if (t.name().equals(name)) {
        return t;
      }
    }
    return null;
  }
}
