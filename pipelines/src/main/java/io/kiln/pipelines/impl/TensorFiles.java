package io.kiln.pipelines.impl;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.kiln.pools.DataType;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pipelines.InputFormat;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Cached files to input tensors ({@link InputFormat}) and output tensors to JSON-like step results.
 * Stateless; errors are {@link StepFailedException}s saying what does not fit.
 */
public final class TensorFiles {

  private static final ObjectMapper JSON = JsonMapper.builder(com.fasterxml.jackson.core.JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build()).build()).build();

  private TensorFiles() {
  }

  /** The input tensors {@code data} holds, for a model with {@code inputs}. */
  public static List<Tensor> decode(byte[] data, InputFormat format, String tensor, List<TensorSpec> inputs) {
    return format == InputFormat.RAW ? List.of(raw(data, pick(tensor, inputs))) : oipJson(data);
  }

  private static TensorSpec pick(String tensor, List<TensorSpec> inputs) {
    if (!tensor.isEmpty()) {
      return inputs.stream().filter(t -> t.name().equals(tensor)).findFirst().orElseThrow(() ->
          new StepFailedException("the deployment has no input '" + tensor + "'; its inputs: " + names(inputs)));
    }
    if (inputs.size() != 1) {
      throw new StepFailedException("the deployment has inputs " + names(inputs)
          + "; name the one a raw file fills with 'tensor'");
    }
    return inputs.get(0);
  }

  private static String names(List<TensorSpec> inputs) {
    return inputs.stream().map(TensorSpec::name).toList().toString();
  }

  /**
   * A raw file as one batch of rows of the input's fixed trailing dimensions; with one variable dimension beside the
   * first, as one row that the file fills along it; for a BYTES input, the whole file as its one element (an encoded
   * image, a document): every dimension 1, a variable one included.
   */
  static Tensor raw(byte[] data, TensorSpec spec) {
    DataType type = spec.datatype();
    long[] shape = spec.shape();
    if (type == DataType.BYTES) {
      long[] one = new long[Math.max(1, shape.length)];
      for (int i = 0; i < shape.length; i++) {
        if (shape[i] > 1) {
          throw new StepFailedException("input '" + spec.name() + "' has shape " + Arrays.toString(shape)
              + "; a raw file is one BYTES element, so every dimension must be 1 or variable (use format oip_json)");
        }
      }
      Arrays.fill(one, 1);
      return Tensor.ofBytes(spec.name(), one, List.of(data));
    }
    long rowElements = 1;
    int variable = -1;
    for (int i = 1; i < shape.length; i++) {
      if (shape[i] < 0 && variable > 0) {
        throw new StepFailedException("input '" + spec.name() + "' has shape " + Arrays.toString(shape)
            + "; a raw file fills at most one variable dimension beside the first (use format oip_json)");
      } else if (shape[i] < 0) {
        variable = i;
      } else {
        rowElements *= shape[i];
      }
    }
    long rowBytes = Math.max(1, rowElements * type.byteSize());
    if (shape.length == 0) {
      throw new StepFailedException("input '" + spec.name() + "' is a scalar; a raw file fills a batch dimension");
    }
    if (variable > 0) {
      return oneRow(data, spec, variable, rowBytes);
    }
    if (data.length == 0 || data.length % rowBytes != 0) {
      throw new StepFailedException("a file of " + data.length + " bytes is not a whole number of rows of input '"
          + spec.name() + "' " + Arrays.toString(Arrays.copyOfRange(shape, 1, shape.length)) + " " + type
          + " (" + rowBytes + " bytes each)");
    }
    long batch = data.length / rowBytes;
    if (shape[0] >= 0 && shape[0] != batch) {
      throw new StepFailedException("input '" + spec.name() + "' takes exactly " + shape[0] + " rows; the file holds "
          + batch);
    }
    long[] actual = shape.clone();
    actual[0] = batch;
    return new Tensor(spec.name(), type, actual, data);
  }

  /**
   * A raw file as one row whose variable dimension holds what the file holds (an encoded image as UINT8 [1, bytes]):
   * for an input with a variable dimension beside the first.
   */
  private static Tensor oneRow(byte[] data, TensorSpec spec, int variable, long sliceBytes) {
    long[] shape = spec.shape();
    if (shape[0] > 1) {
      throw new StepFailedException("input '" + spec.name() + "' takes exactly " + shape[0] + " rows; a raw file"
          + " fills one row when a dimension beside the first is variable " + Arrays.toString(shape));
    }
    if (data.length == 0 || data.length % sliceBytes != 0) {
      throw new StepFailedException("a file of " + data.length + " bytes does not fill input '" + spec.name() + "' "
          + Arrays.toString(shape) + " " + spec.datatype() + " (" + sliceBytes + " bytes per step of dimension "
          + variable + ")");
    }
    long[] actual = shape.clone();
    actual[0] = 1;
    actual[variable] = data.length / sliceBytes;
    return new Tensor(spec.name(), spec.datatype(), actual, data);
  }

  /** An OIP v2 JSON request's inputs. */
  static List<Tensor> oipJson(byte[] data) {
    JsonNode root;
    try {
      root = JSON.readTree(data);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new StepFailedException("the input file is not JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new StepFailedException("the input file cannot be read: " + e.getMessage());
    }
    JsonNode inputs = root == null ? null : root.get("inputs");
    if (inputs == null || !inputs.isArray() || inputs.isEmpty()) {
      throw new StepFailedException("the input file has no 'inputs' list (expected an OIP v2 request)");
    }
    List<Tensor> out = new ArrayList<>();
    for (JsonNode in : inputs) {
      String name = in.path("name").asText("");
      DataType type = DataType.parse(in.path("datatype").asText("")).orElseThrow(() ->
          new StepFailedException("input '" + name + "': unknown datatype '" + in.path("datatype").asText() + "'"));
      JsonNode shapeNode = in.get("shape");
      if (name.isEmpty() || shapeNode == null || !shapeNode.isArray()) {
        throw new StepFailedException("each input needs a name, datatype and shape");
      }
      long[] shape = new long[shapeNode.size()];
      for (int i = 0; i < shape.length; i++) {
        shape[i] = shapeNode.get(i).asLong(-1);
        if (shape[i] < 0) {
          throw new StepFailedException("input '" + name + "': shape " + shapeNode + " has a negative dimension");
        }
      }
      List<JsonNode> values = new ArrayList<>();
      flatten(in.get("data"), values);
      long n = Tensor.elementCount(shape);
      if (values.size() != n) {
        throw new StepFailedException("input '" + name + "': shape " + Arrays.toString(shape) + " needs " + n
            + " values, the data has " + values.size());
      }
      out.add(type == DataType.BYTES ? Tensor.ofBytes(name, shape, strings(name, values))
          : new Tensor(name, type, shape, encode(name, type, values)));
    }
    return out;
  }

  private static void flatten(JsonNode node, List<JsonNode> into) {
    if (node == null) {
      return;
    }
    if (node.isArray()) {
      for (JsonNode n : node) {
        flatten(n, into);
      }
    } else {
      into.add(node);
    }
  }

  /** BYTES values as OIP JSON writes them: strings, UTF-8. */
  private static List<byte[]> strings(String name, List<JsonNode> values) {
    List<byte[]> out = new ArrayList<>(values.size());
    for (JsonNode v : values) {
      if (!v.isTextual()) {
        throw new StepFailedException("input '" + name + "': BYTES data are strings, got " + v);
      }
      out.add(v.textValue().getBytes(StandardCharsets.UTF_8));
    }
    return out;
  }

  private static byte[] encode(String name, DataType type, List<JsonNode> values) {
    if (type.byteSize() < 0 || type == DataType.FP16 || type == DataType.BF16) {
      throw new StepFailedException("input '" + name + "': " + type + " is not supported in JSON input files");
    }
    ByteBuffer buf = ByteBuffer.allocate(values.size() * type.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    for (JsonNode v : values) {
      if (!(v.isNumber() || v.isBoolean())) {
        throw new StepFailedException("input '" + name + "': expected numbers, got " + v);
      }
      switch (type) {
        case BOOL -> buf.put((byte) (v.asBoolean() || v.asDouble() != 0 ? 1 : 0));
        case INT8, UINT8 -> buf.put((byte) v.asLong());
        case INT16, UINT16 -> buf.putShort((short) v.asLong());
        case INT32, UINT32 -> buf.putInt((int) v.asLong());
        case INT64, UINT64 -> buf.putLong(v.asLong());
        case FP32 -> buf.putFloat((float) v.asDouble());
        case FP64 -> buf.putDouble(v.asDouble());
        default -> throw new StepFailedException("input '" + name + "': " + type + " is not supported");
      }
    }
    return buf.array();
  }

  /** An output tensor as a step result: name, datatype, shape and (up to {@code maxElements}) its values. */
  public static Map<String, Object> toResult(Tensor t, long maxElements) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("name", t.name());
    out.put("datatype", t.datatype().name());
    List<Long> shape = new ArrayList<>();
    for (long d : t.shape()) {
      shape.add(d);
    }
    out.put("shape", shape);
    long n = t.elementCount();
    if (t.datatype() == DataType.BYTES && n <= maxElements) {
      bytesData(t, out);
      return out;
    }
    boolean decodable = t.datatype().byteSize() > 0 && t.datatype() != DataType.FP16 && t.datatype() != DataType.BF16;
    if (n > maxElements || !decodable) {
      out.put("data_omitted", true);
      return out;
    }
    ByteBuffer buf = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    List<Object> data = new ArrayList<>((int) n);
    for (long i = 0; i < n; i++) {
      data.add(switch (t.datatype()) {
        case BOOL -> buf.get() != 0;
        case INT8 -> (long) buf.get();
        case UINT8 -> (long) (buf.get() & 0xff);
        case INT16 -> (long) buf.getShort();
        case UINT16 -> (long) (buf.getShort() & 0xffff);
        case INT32 -> (long) buf.getInt();
        case UINT32 -> buf.getInt() & 0xffffffffL;
        case INT64, UINT64 -> buf.getLong();
        case FP32 -> (double) buf.getFloat();
        default -> buf.getDouble();
      });
    }
    out.put("data", data);
    return out;
  }

  /**
   * A BYTES output's elements: as strings when every one is valid UTF-8 (text, JSON a model wrote), else each
   * base64 under {@code data_base64} (an image, say), so no byte is lost either way.
   */
  private static void bytesData(Tensor t, Map<String, Object> out) {
    List<byte[]> elements;
    try {
      elements = t.byteElements();
    } catch (IllegalArgumentException e) {
      throw new StepFailedException("output '" + t.name() + "': " + e.getMessage());
    }
    List<String> text = new ArrayList<>(elements.size());
    CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    for (byte[] e : elements) {
      try {
        text.add(utf8.decode(ByteBuffer.wrap(e)).toString());
      } catch (CharacterCodingException notText) {
        List<String> b64 = new ArrayList<>(elements.size());
        for (byte[] x : elements) {
          b64.add(Base64.getEncoder().encodeToString(x));
        }
        out.put("data_base64", b64);
        return;
      }
    }
    out.put("data", text);
  }
}
