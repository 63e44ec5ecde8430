package io.kiln.gateway.impl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.kiln.gateway.impl.RequestHeader.InputHeader;
import io.kiln.gateway.impl.RequestHeader.OutputHeader;
import io.kiln.pools.InferenceException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * First pass over an OIP JSON request: reads everything except the tensor {@code data}, which it only checks
 * is an array (or, for a scalar, shape {@code []}, a bare value) and skips, so sizes can be validated before any
 * tensor memory is allocated. Streaming, so the
 * body is never turned into a tree of boxed values. Thread-safe.
 */
final class JsonRequestDecoder {

  static final int MAX_NESTING_DEPTH = 64;

  private final JsonFactory factory;

  JsonRequestDecoder(long maxBodyBytes) {
    int maxString = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(maxBodyBytes, 1024));
    this.factory = JsonFactory.builder()
        .streamReadConstraints(StreamReadConstraints.builder()
            .maxNestingDepth(MAX_NESTING_DEPTH)
            .maxStringLength(maxString)
            .build())
        .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
        // Tensors are mostly decimal floats: parsing and printing them was the gateway's hottest code.
        .enable(StreamReadFeature.USE_FAST_DOUBLE_PARSER)
        .enable(com.fasterxml.jackson.core.StreamWriteFeature.USE_FAST_DOUBLE_WRITER)
        .build();
  }

  JsonFactory factory() {
    return factory;
  }

  /**
   * @throws InferenceException kind INVALID_INPUT naming the field for malformed JSON or wrong types
   */
  RequestHeader decode(byte[] body, int offset, int length) {
    try (JsonParser p = factory.createParser(body, offset, length)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw InferenceException.invalid("request body: must be a JSON object");
      }
      String id = "";
      Map<String, Object> parameters = Map.of();
      List<InputHeader> inputs = null;
      List<OutputHeader> outputs = List.of();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken t = p.nextToken();
        switch (field) {
          case "id" -> {
            if (t != JsonToken.VALUE_STRING) {
              throw InferenceException.invalid("id: must be a string");
            }
            id = p.getText();
          }
          case "parameters" -> parameters = parameters(p, "parameters");
          case "inputs" -> inputs = inputs(p);
          case "outputs" -> outputs = outputs(p);
          default -> p.skipChildren();
        }
      }
      if (p.nextToken() != null) {
        throw InferenceException.invalid("request body: unexpected content after the JSON object");
      }
      if (inputs == null) {
        throw InferenceException.invalid("inputs: missing");
      }
      return new RequestHeader(id, parameters, inputs, outputs);
    } catch (StreamConstraintsException e) {
      throw InferenceException.invalid("request body: " + e.getOriginalMessage());
    } catch (JsonProcessingException e) {
      throw malformed(e);
    } catch (IOException e) {
      throw InferenceException.invalid("request body: unreadable: " + e.getMessage());
    }
  }

  static InferenceException malformed(JsonProcessingException e) {
    String msg = e.getOriginalMessage();
    int nl = msg.indexOf('\n');
    if (nl >= 0) {
      msg = msg.substring(0, nl);
    }
    var loc = e.getLocation();
    String where = loc == null ? "" : " at line " + loc.getLineNr() + " column " + loc.getColumnNr();
    return InferenceException.invalid("request body: malformed JSON" + where + ": " + msg);
  }

  private List<InputHeader> inputs(JsonParser p) throws IOException {
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw InferenceException.invalid("inputs: must be an array");
    }
    List<InputHeader> inputs = new ArrayList<>();
    while (p.nextToken() != JsonToken.END_ARRAY) {
      inputs.add(input(p, inputs.size()));
    }
    return inputs;
  }

  private InputHeader input(JsonParser p, int index) throws IOException {
    String path = Fields.inputPath(index);
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw InferenceException.invalid(path + ": must be an object");
    }
    String name = null;
    String datatype = null;
    long[] shape = null;
    Map<String, Object> parameters = Map.of();
    boolean hasData = false;
    boolean bare = false;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken t = p.nextToken();
      switch (field) {
        case "name" -> name = requireString(p, t, path + ".name");
        case "datatype" -> datatype = requireString(p, t, path + ".datatype");
        case "shape" -> shape = shape(p, path + ".shape");
        case "parameters" -> parameters = parameters(p, path + ".parameters");
        case "data" -> {
          // A scalar's one element may stand bare ("data": 16000), as Triton and KServe take it; checked below.
          bare = t.isScalarValue() && t != JsonToken.VALUE_NULL;
          if (t != JsonToken.START_ARRAY && !bare) {
            throw InferenceException.invalid(path + ".data: must be an array");
          }
          hasData = true;
          p.skipChildren();
        }
        default -> p.skipChildren();
      }
    }
    if (name == null) {
      throw InferenceException.invalid(path + ".name: missing");
    }
    if (datatype == null) {
      throw InferenceException.invalid(path + ".datatype: missing");
    }
    if (shape == null) {
      throw InferenceException.invalid(path + ".shape: missing");
    }
    if (bare && shape.length != 0) {
      throw InferenceException.invalid(path + ".data: must be an array (a bare value is only a scalar's, shape [])");
    }
    long binarySize = Fields.nonNegativeLong(parameters, Fields.BINARY_DATA_SIZE, path + ".parameters");
    return new InputHeader(name, datatype, shape, parameters, binarySize, hasData);
  }

  private List<OutputHeader> outputs(JsonParser p) throws IOException {
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw InferenceException.invalid("outputs: must be an array");
    }
    List<OutputHeader> outputs = new ArrayList<>();
    while (p.nextToken() != JsonToken.END_ARRAY) {
      String path = Fields.outputPath(outputs.size());
      if (p.currentToken() != JsonToken.START_OBJECT) {
        throw InferenceException.invalid(path + ": must be an object");
      }
      String name = null;
      Map<String, Object> parameters = Map.of();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken t = p.nextToken();
        switch (field) {
          case "name" -> name = requireString(p, t, path + ".name");
          case "parameters" -> parameters = parameters(p, path + ".parameters");
          default -> p.skipChildren();
        }
      }
      if (name == null) {
        throw InferenceException.invalid(path + ".name: missing");
      }
      outputs.add(new OutputHeader(name, Fields.bool(parameters, Fields.BINARY_DATA, path + ".parameters"), parameters));
    }
    return outputs;
  }

  private static String requireString(JsonParser p, JsonToken t, String path) throws IOException {
    if (t != JsonToken.VALUE_STRING) {
      throw InferenceException.invalid(path + ": must be a string");
    }
    return p.getText();
  }

  private static long[] shape(JsonParser p, String path) throws IOException {
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw InferenceException.invalid(path + ": must be an array of integers");
    }
    long[] dims = new long[4];
    int n = 0;
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      if (t != JsonToken.VALUE_NUMBER_INT) {
        throw InferenceException.invalid(path + "[" + n + "]: must be an integer");
      }
      if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
        throw InferenceException.invalid(path + "[" + n + "]: " + p.getText() + " is too large");
      }
      if (n == MAX_NESTING_DEPTH) {
        throw InferenceException.invalid(path + ": more than " + MAX_NESTING_DEPTH + " dimensions");
      }
      if (n == dims.length) {
        dims = java.util.Arrays.copyOf(dims, n * 2);
      }
      dims[n++] = p.getLongValue();
    }
    return java.util.Arrays.copyOf(dims, n);
  }

  /** A flat object of string, number and boolean values. */
  static Map<String, Object> parameters(JsonParser p, String path) throws IOException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw InferenceException.invalid(path + ": must be an object");
    }
    Map<String, Object> params = new LinkedHashMap<>();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      JsonToken t = p.nextToken();
      Object value = switch (t) {
        case VALUE_STRING -> p.getText();
        case VALUE_TRUE -> Boolean.TRUE;
        case VALUE_FALSE -> Boolean.FALSE;
        case VALUE_NUMBER_INT -> p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
            ? p.getBigIntegerValue() : (Object) p.getLongValue();
        case VALUE_NUMBER_FLOAT -> p.getDoubleValue();
        default -> throw InferenceException.invalid(path + "." + key + ": must be a string, number or boolean");
      };
      params.put(key, value);
    }
    return params;
  }
}
