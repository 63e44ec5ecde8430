package io.kiln.pools.impl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.util.TokenBuffer;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads one Open Inference Protocol v2 JSON inference request, the body a client posts to
 * {@code /v2/models/{m}/infer}: {@code id}, {@code inputs} (each {@code name}, {@code datatype}, {@code shape},
 * {@code data} flat or nested to the shape), {@code outputs} (names) and {@code parameters} (strings, numbers,
 * booleans). Every {@link DataType}: numbers in the type's range (FP16 and BF16 rounded to nearest), BOOL as
 * {@code true}/{@code false}, BYTES as JSON strings (their UTF-8 bytes). The data is streamed into the tensor's bytes,
 * so a request costs about its tensors' size in memory, not a tree of nodes per element. For warm-up samples
 * ({@link WarmupSamples}), read once per load; the gateway's decoders read the same form on the request path.
 *
 * <p>Every problem is an {@link IllegalArgumentException} whose message names the field ({@code inputs[0].data:
 * element 17 is "x", not a number (FP32)}).
 */
final class JsonRequestReader {

  private static final JsonFactory JSON = JsonFactory.builder().build();

  private JsonRequestReader() {
  }

  /**
   * @throws IllegalArgumentException naming the field that does not fit the protocol (or where the JSON broke)
   * @throws IOException when {@code in} cannot be read
   */
  static InferenceRequest read(InputStream in) throws IOException {
    try (JsonParser p = JSON.createParser(in)) {
      return request(p);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not valid JSON: " + e.getOriginalMessage() + " (line "
          + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")", e);
    }
  }

  private static InferenceRequest request(JsonParser p) throws IOException {
    if (p.nextToken() != JsonToken.START_OBJECT) {
      throw new IllegalArgumentException("the request must be a JSON object {\"inputs\": [...]}");
    }
    String id = "";
    List<Tensor> inputs = null;
    List<String> outputs = List.of();
    Map<String, Object> parameters = Map.of();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken value = p.nextToken();
      switch (field) {
        case "id" -> id = text(p, value, "id");
        case "inputs" -> inputs = inputs(p, value);
        case "outputs" -> outputs = outputs(p, value);
        case "parameters" -> parameters = parameters(p, value, "parameters");
        default -> throw new IllegalArgumentException(field + ": not a field of an inference request (id, inputs,"
            + " outputs, parameters)");
      }
    }
    if (p.nextToken() != null) {
      throw new IllegalArgumentException("content after the request's closing '}'");
    }
    if (inputs == null || inputs.isEmpty()) {
      throw new IllegalArgumentException("inputs: missing; a request has at least one input");
    }
    return new InferenceRequest(id, inputs, outputs, parameters);
  }

  private static List<Tensor> inputs(JsonParser p, JsonToken value) throws IOException {
    require(value == JsonToken.START_ARRAY, "inputs", "an array of tensors");
    List<Tensor> inputs = new ArrayList<>();
    while (p.nextToken() != JsonToken.END_ARRAY) {
      inputs.add(input(p, "inputs[" + inputs.size() + "]"));
    }
    return inputs;
  }

  private static Tensor input(JsonParser p, String at) throws IOException {
    require(p.currentToken() == JsonToken.START_OBJECT, at, "an object {name, datatype, shape, data}");
    String name = null;
    DataType type = null;
    long[] shape = null;
    byte[] data = null;
    TokenBuffer early = null; // data written before its datatype or shape: kept as tokens until they are known
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken value = p.nextToken();
      switch (field) {
        case "name" -> name = text(p, value, at + ".name");
        case "datatype" -> {
          String spelled = text(p, value, at + ".datatype");
          type = DataType.parse(spelled).orElseThrow(() -> new IllegalArgumentException(at + ".datatype: '" + spelled
              + "' is no datatype of the protocol " + Arrays.toString(DataType.values())));
        }
        case "shape" -> shape = shape(p, value, at + ".shape");
        case "parameters" -> {
          if (parameters(p, value, at + ".parameters").containsKey("binary_data_size")) {
            throw new IllegalArgumentException(at + ".parameters: binary_data_size points at binary data after the"
                + " JSON, which a JSON file cannot hold; write the elements in data");
          }
        }
        case "data" -> {
          if (type != null && shape != null) {
            data = data(p, type, shape, at + ".data");
          } else {
            early = new TokenBuffer(p);
            early.copyCurrentStructure(p);
          }
        }
        default -> throw new IllegalArgumentException(at + "." + field + ": not a field of an input tensor (name,"
            + " datatype, shape, parameters, data)");
      }
    }
    missing(name, at + ".name");
    missing(type, at + ".datatype");
    missing(shape, at + ".shape");
    if (early != null) {
      try (JsonParser replay = early.asParser()) {
        replay.nextToken();
        data = data(replay, type, shape, at + ".data");
      }
    }
    missing(data, at + ".data");
    return new Tensor(name, type, shape, data);
  }

  private static long[] shape(JsonParser p, JsonToken value, String at) throws IOException {
    require(value == JsonToken.START_ARRAY, at, "an array of dimensions");
    List<Long> dims = new ArrayList<>();
    while (p.nextToken() != JsonToken.END_ARRAY) {
      if (p.currentToken() != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
          || p.getLongValue() < 0) {
        throw new IllegalArgumentException(at + ": dimension " + dims.size() + " is " + p.getText() + ", not a count");
      }
      dims.add(p.getLongValue());
    }
    return dims.stream().mapToLong(Long::longValue).toArray();
  }

  private static byte[] data(JsonParser p, DataType type, long[] shape, String at) throws IOException {
    if (shape.length == 0 && p.currentToken().isScalarValue()) {
      // A scalar's one element may stand bare ("data": 16000), as the gateway takes it.
      JsonElementWriter one = new JsonElementWriter(type, 1, at);
      one.element(p);
      return one.bytes();
    }
    require(p.currentToken() == JsonToken.START_ARRAY, at, "an array of elements, flat or nested to the shape"
        + (shape.length == 0 ? ", or a scalar's one element" : ""));
    long expected;
    try {
      expected = Tensor.elementCount(shape);
    } catch (IllegalArgumentException | ArithmeticException e) {
      throw new IllegalArgumentException(at + ": shape " + Arrays.toString(shape) + " holds too many elements", e);
    }
    JsonElementWriter out = new JsonElementWriter(type, expected, at);
    long[] dims = new long[Math.max(shape.length, 1)];
    Arrays.fill(dims, -1);
    int rank = nested(p, out, dims, 0, at);
    if (rank > 1 && !Arrays.equals(dims, 0, rank, shape, 0, shape.length)) {
      throw new IllegalArgumentException(at + ": nested as " + Arrays.toString(Arrays.copyOf(dims, rank))
          + ", not as the shape " + Arrays.toString(shape));
    }
    if (out.count() != expected) {
      throw new IllegalArgumentException(at + ": " + out.count() + " elements, but shape " + Arrays.toString(shape)
          + " holds " + expected);
    }
    return out.bytes();
  }

  /** Reads the array whose '[' is the current token at {@code depth}; returns the nesting depth of its elements. */
  private static int nested(JsonParser p, JsonElementWriter out, long[] dims, int depth, String at) throws IOException {
    if (depth >= dims.length) {
      throw new IllegalArgumentException(at + ": nested deeper than the shape's " + dims.length + " dimensions");
    }
    long length = 0;
    int inner = -1;
    while (p.nextToken() != JsonToken.END_ARRAY) {
      int mine = p.currentToken() == JsonToken.START_ARRAY ? nested(p, out, dims, depth + 1, at) : depth + 1;
      if (mine == depth + 1) {
        out.element(p);
      }
      if (inner >= 0 && inner != mine) {
        throw new IllegalArgumentException(at + ": nested unevenly (arrays and elements side by side) at depth " + depth);
      }
      inner = mine;
      length++;
    }
    if (dims[depth] < 0) {
      dims[depth] = length;
    } else if (dims[depth] != length) {
      throw new IllegalArgumentException(at + ": ragged: arrays at depth " + depth + " hold " + dims[depth] + " and "
          + length + " elements");
    }
    return Math.max(inner, depth + 1);
  }

  private static List<String> outputs(JsonParser p, JsonToken value) throws IOException {
    require(value == JsonToken.START_ARRAY, "outputs", "an array of {\"name\": ...}");
    List<String> names = new ArrayList<>();
    while (p.nextToken() != JsonToken.END_ARRAY) {
      String at = "outputs[" + names.size() + "]";
      require(p.currentToken() == JsonToken.START_OBJECT, at, "an object {\"name\": ...}");
      String name = null;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken v = p.nextToken();
        if (field.equals("name")) {
          name = text(p, v, at + ".name");
        } else if (field.equals("parameters")) {
          parameters(p, v, at + ".parameters");
        } else {
          throw new IllegalArgumentException(at + "." + field + ": not a field of a requested output (name, parameters)");
        }
      }
      missing(name, at + ".name");
      names.add(name);
    }
    return names;
  }

  private static Map<String, Object> parameters(JsonParser p, JsonToken value, String at) throws IOException {
    require(value == JsonToken.START_OBJECT, at, "an object of strings, numbers and booleans");
    Map<String, Object> parameters = new LinkedHashMap<>();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      Object v = switch (p.nextToken()) {
        case VALUE_STRING -> p.getText();
        case VALUE_TRUE, VALUE_FALSE -> p.getBooleanValue();
        case VALUE_NUMBER_INT -> p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? (Object) p.getDoubleValue()
            : (Object) p.getLongValue();
        case VALUE_NUMBER_FLOAT -> p.getDoubleValue();
        default -> throw new IllegalArgumentException(at + "." + name + ": a parameter is a string, number or boolean");
      };
      parameters.put(name, v);
    }
    return parameters;
  }

  private static String text(JsonParser p, JsonToken value, String at) throws IOException {
    require(value == JsonToken.VALUE_STRING, at, "a string");
    return p.getText();
  }

  private static void require(boolean ok, String at, String what) {
    if (!ok) {
      throw new IllegalArgumentException(at + ": must be " + what);
    }
  }

  private static void missing(Object value, String at) {
    if (value == null) {
      throw new IllegalArgumentException(at + ": missing");
    }
  }
}
