package io.kiln.deploy.node;

import com.google.protobuf.ByteString;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.TensorSpec;
import io.kiln.protocol.grpc.ModelInferRequest;
import io.kiln.protocol.grpc.ModelInferRequest.InferInputTensor;
import io.vertx.core.buffer.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The three encodings (HTTP JSON, HTTP with binary tensors and binary outputs, gRPC with
 * {@code raw_input_contents}) of one synthetic OIP request to a model, built from its signature alone: every
 * declared input, in order, with {@code rows} along a variable first (batch) dimension and the declared size
 * along every fixed one, filled with varied values of its datatype (no all-zeros shortcut anywhere). Immutable.
 *
 * {@code BYTES} elements are short ASCII strings ({@code "w0"}…{@code "w100"}): 4-byte little-endian length and
 * the bytes in the binary and raw encodings, JSON strings in the JSON one. A streaming model's request
 * ({@link #generate}) is the body of Triton's generate extension: one row, each input by name, nested as its shape.
 *
 * <p>A signature that cannot be synthesised ({@link #why}) is one with a variable dimension other than the first
 * (which size would the model take?), or an input larger than {@link #MAX_ELEMENTS} elements per row; for a
 * streaming model also an FP16 or BF16 input (generate takes neither).
 */
final class WarmupRequests {

  /** The most elements one input of one row may have for a warm-up to send it. */
  static final long MAX_ELEMENTS = 1 << 18;
  /**
   * The size a streaming model's request takes along a variable dimension other than the first (a prompt's
   * length, say): short, so that the warm-up's streams stay short.
   */
  static final int STREAM_INNER = 4;

  final int rows;
  final Buffer json;
  final Buffer binary;
  final String binaryHeaderLength;
  final ModelInferRequest grpc;
  /** The generate extension's body (one row, the first row of {@link #json}'s data). */
  final Buffer generate;

  private WarmupRequests(int rows, Buffer json, Buffer binary, String binaryHeaderLength, ModelInferRequest grpc,
                         Buffer generate) {
    this.rows = rows;
    this.json = json;
    this.binary = binary;
    this.binaryHeaderLength = binaryHeaderLength;
    this.grpc = grpc;
    this.generate = generate;
  }

  /** Why no request can be synthesised for {@code signature}, or null if one can. */
  static String why(ModelSignature signature) {
    return why(signature, false);
  }

  /** Why no request can be synthesised for {@code signature} ({@code streaming}: a generate body), or null. */
  static String why(ModelSignature signature, boolean streaming) {
    if (signature.inputs().isEmpty()) {
      return "it declares no inputs";
    }
    for (TensorSpec in : signature.inputs()) {
      if (streaming && (in.datatype() == DataType.FP16 || in.datatype() == DataType.BF16)) {
        return "input '" + in.name() + "' is " + in.datatype() + ", which the generate extension does not take";
      }
      long[] shape = in.shape();
      long elements = 1;
      for (int i = 0; i < shape.length; i++) {
        if (shape[i] == -1 && i > 0 && !streaming) {
          return "input '" + in.name() + "' has a variable dimension " + i + " in "
              + java.util.Arrays.toString(shape);
        }
        elements *= i == 0 ? 1 : shape[i] == -1 ? STREAM_INNER : shape[i];
      }
      if (elements > MAX_ELEMENTS) {
        return "input '" + in.name() + "' has " + elements + " elements per row (more than " + MAX_ELEMENTS + ")";
      }
    }
    return null;
  }

  /**
   * The requests for {@code model} with {@code rows} along a variable first dimension (a fixed one keeps its size).
   *
   * @throws IllegalArgumentException if {@link #why} names a reason
   */
  static WarmupRequests of(String model, ModelSignature signature, int rows) {
    return of(model, signature, rows, false);
  }

  /**
   * As {@link #of(String, ModelSignature, int)}; {@code streaming}: a variable dimension after the first takes
   * {@link #STREAM_INNER}.
   */
  static WarmupRequests of(String model, ModelSignature signature, int rows, boolean streaming) {
    String why = why(signature, streaming);
    if (why != null) {
      throw new IllegalArgumentException("no warm-up input for model '" + model + "': " + why);
    }
    StringBuilder json = new StringBuilder("{\"inputs\":[");
    StringBuilder header = new StringBuilder("{\"inputs\":[");
    ModelInferRequest.Builder grpc = ModelInferRequest.newBuilder().setModelName(model);
    List<byte[]> raws = new ArrayList<>();
    StringBuilder generate = new StringBuilder("{");
    int seed = 0;
    for (TensorSpec in : signature.inputs()) {
      long[] shape = in.shape();
      if (shape.length > 0 && shape[0] == -1) {
        shape[0] = rows;
      }
      for (int i = 1; i < shape.length; i++) {
        shape[i] = shape[i] == -1 ? STREAM_INNER : shape[i];
      }
      int n = 1;
      for (long d : shape) {
        n = Math.multiplyExact(n, (int) d);
      }
      String common = "{\"name\":\"" + in.name() + "\",\"shape\":" + shapeJson(shape) + ",\"datatype\":\""
          + in.datatype().name() + "\"";
      int size = 0;
      for (int i = 0; i < n; i++) {
        size += in.datatype() == DataType.BYTES ? 4 + word(k(i, seed)).length : in.datatype().byteSize();
      }
      ByteBuffer raw = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
      StringBuilder data = new StringBuilder(n * 6);
      List<String> elements = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        StringBuilder one = new StringBuilder();
        put(in.datatype(), k(i, seed), raw, one);
        data.append(i == 0 ? "" : ",").append(one);
        elements.add(one.toString());
      }
      generate.append(generate.length() > 1 ? "," : "").append('"').append(in.name()).append("\":");
      nested(generate, java.util.Arrays.copyOfRange(shape, in.shape().length > 0 && in.shape()[0] == -1 ? 1 : 0,
          shape.length), 0, elements.iterator());
      seed += 11;
      String sep = json.length() > "{\"inputs\":[".length() ? "," : "";
      json.append(sep).append(common).append(",\"data\":[").append(data).append("]}");
      header.append(sep).append(common).append(",\"parameters\":{\"binary_data_size\":").append(raw.capacity())
          .append("}}");
      raws.add(raw.array());
      InferInputTensor.Builder t = InferInputTensor.newBuilder().setName(in.name()).setDatatype(in.datatype().name());
      for (long d : shape) {
        t.addShape(d);
      }
      grpc.addInputs(t).addRawInputContents(ByteString.copyFrom(raw.array()));
    }
    json.append("]}");
    header.append("]");
    if (signature.outputs().isEmpty()) {
      header.append(",\"parameters\":{\"binary_data_output\":true}}");
    } else {
      header.append(",\"outputs\":[");
      for (int i = 0; i < signature.outputs().size(); i++) {
        header.append(i == 0 ? "" : ",").append("{\"name\":\"").append(signature.outputs().get(i).name())
            .append("\",\"parameters\":{\"binary_data\":true}}");
      }
      header.append("]}");
    }
    byte[] head = header.toString().getBytes(StandardCharsets.UTF_8);
    Buffer binary = Buffer.buffer(head);
    for (byte[] r : raws) {
      binary.appendBytes(r);
    }
    return new WarmupRequests(rows, Buffer.buffer(json.toString()), binary, Integer.toString(head.length), grpc.build(),
        Buffer.buffer(generate.append('}').toString()));
  }

  private static int k(int i, int seed) {
    return ((i + seed) * 37) % 101;
  }

  private static byte[] word(int k) {
    return ("w" + k).getBytes(StandardCharsets.US_ASCII);
  }

  /** The next elements as a JSON value nested as {@code shape} from dimension {@code d} (a scalar at the end). */
  private static void nested(StringBuilder out, long[] shape, int d, java.util.Iterator<String> elements) {
    if (d == shape.length) {
      out.append(elements.next());
      return;
    }
    out.append('[');
    for (long i = 0; i < shape[d]; i++) {
      out.append(i == 0 ? "" : ",");
      nested(out, shape, d + 1, elements);
    }
    out.append(']');
  }

  /** One element from {@code k} in 0..100, in both encodings: small integers, or floats in -3..3.25. */
  private static void put(DataType type, int k, ByteBuffer raw, StringBuilder data) {
    float f = k / 16f - 3f;
    switch (type) {
      case BOOL -> {
        raw.put((byte) (k & 1));
        data.append((k & 1) == 1);
      }
      case UINT8 -> { raw.put((byte) k); data.append(k); }
      case INT8 -> { raw.put((byte) (k - 50)); data.append(k - 50); }
      case UINT16 -> { raw.putShort((short) k); data.append(k); }
      case INT16 -> { raw.putShort((short) (k - 50)); data.append(k - 50); }
      case UINT32 -> { raw.putInt(k); data.append(k); }
      case INT32 -> { raw.putInt(k - 50); data.append(k - 50); }
      case UINT64 -> { raw.putLong(k); data.append(k); }
      case INT64 -> { raw.putLong(k - 50); data.append(k - 50); }
      case FP32 -> { raw.putFloat(f); data.append(f); }
      case FP64 -> { raw.putDouble(f); data.append(f); }
      case BF16 -> { raw.putShort((short) (Float.floatToIntBits(f) >>> 16)); data.append(f); }
      case FP16 -> { raw.putShort(half(f)); data.append(f); }
      case BYTES -> {
        byte[] w = word(k);
        raw.putInt(w.length).put(w);
        data.append('"').append(new String(w, StandardCharsets.US_ASCII)).append('"');
      }
    }
  }

  /** IEEE 754 binary16 of {@code f}, exact for the values {@link #put} makes (multiples of 1/16 in -3..3.25). */
  static short half(float f) {
    if (f == 0f) {
      return 0;
    }
    int bits = Float.floatToIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int exp = ((bits >>> 23) & 0xff) - 127 + 15;
    int mantissa = (bits >>> 13) & 0x3ff;
    return (short) (sign | (exp << 10) | mantissa);
  }

  private static String shapeJson(long[] shape) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < shape.length; i++) {
      b.append(i == 0 ? "" : ",").append(shape[i]);
    }
    return b.append(']').toString();
  }
}
