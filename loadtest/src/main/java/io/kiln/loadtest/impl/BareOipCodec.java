package io.kiln.loadtest.impl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The bare baseline's own OIP v2 HTTP work: parses an inference request (JSON, or the binary tensor extension:
 * a JSON header of {@code Inference-Header-Content-Length} bytes followed by raw little-endian tensors) with
 * Jackson streaming into FP32 tensors, checks every shape against its data, and encodes an answer of ten floats
 * (JSON {@code data}, or binary when the request asks for {@code binary_data_output}). It does what Kiln's
 * front end does per request, minus everything behind it, with the same Jackson settings; one pass instead of
 * Kiln's two, so it stays a limit. Only FP32 inputs. Thread-safe.
 */
public final class BareOipCodec {
  public static final String HEADER_LENGTH = "Inference-Header-Content-Length";
  /** Elements of the one output: the first input's first values (zero-padded). */
  public static final int OUTPUT_SIZE = 10;
  /**
   * The model name whose answer is the first input itself, its shape and every value, as {@code builtin:identity}
   * answers (the like-for-like limit for Kiln's identity model); any other name gets {@link #OUTPUT_SIZE} values, as
   * the MLP answers.
   */
  public static final String ECHO = "echo";

  /** One decoded FP32 input. */
  public record Input(String name, long[] shape, float[] data) {
  }

  /** A decoded request; {@code binaryOutput} when the answer should use the binary extension. */
  public record Request(String id, List<Input> inputs, boolean binaryOutput) {
  }

  /** An encoded answer: JSON, then the raw output bytes when {@code binary}. */
  public record Response(byte[] body, int jsonLength, boolean binary) {
  }

  /** The request is malformed; the message says where, for a 400 answer. */
  public static final class BadRequest extends RuntimeException {
    public BadRequest(String message) {
      super(message, null, false, false);
    }
  }

  private final JsonFactory factory = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
      .enable(StreamReadFeature.USE_FAST_DOUBLE_PARSER)
      .enable(StreamWriteFeature.USE_FAST_DOUBLE_WRITER)
      .build();

  /**
   * @param headerLength the {@code Inference-Header-Content-Length} header, or null for an all-JSON body
   * @throws BadRequest naming the field at fault
   */
  public Request decode(byte[] body, String headerLength) {
    int jsonLength = jsonLength(body.length, headerLength);
    List<Input> inputs = new ArrayList<>(1);
    List<Integer> binarySizes = new ArrayList<>(1);
    String id = "";
    boolean binaryOutput = false;
    try (JsonParser p = factory.createParser(body, 0, jsonLength)) {
      expect(p.nextToken() == JsonToken.START_OBJECT, "request body: must be a JSON object");
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken t = p.nextToken();
        switch (field) {
          case "id" -> {
            expect(t == JsonToken.VALUE_STRING, "id: must be a string");
            id = p.getText();
          }
          case "inputs" -> {
            expect(t == JsonToken.START_ARRAY, "inputs: must be an array");
            while (p.nextToken() != JsonToken.END_ARRAY) {
              input(p, "inputs[" + inputs.size() + "]", inputs, binarySizes);
            }
          }
          case "parameters" -> binaryOutput = binaryDataOutput(p);
          default -> p.skipChildren();
        }
      }
      expect(p.nextToken() == null, "request body: unexpected content after the JSON object");
    } catch (JsonProcessingException e) {
      String msg = e.getOriginalMessage();
      throw new BadRequest("request body: malformed JSON: " + (msg.contains("\n") ? msg.substring(0, msg.indexOf('\n')) : msg));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    expect(!inputs.isEmpty(), "inputs: missing or empty");
    return new Request(id, binaryTensors(body, jsonLength, inputs, binarySizes), binaryOutput);
  }

  private static void input(JsonParser p, String path, List<Input> inputs, List<Integer> binarySizes) throws IOException {
    expect(p.currentToken() == JsonToken.START_OBJECT, path + ": must be an object");
    String name = null;
    String datatype = null;
    long[] shape = null;
    FloatList data = null;
    int binarySize = -1;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken t = p.nextToken();
      switch (field) {
        case "name" -> name = string(p, t, path + ".name");
        case "datatype" -> datatype = string(p, t, path + ".datatype");
        case "shape" -> shape = shape(p, path + ".shape");
        case "data" -> {
          expect(t == JsonToken.START_ARRAY, path + ".data: must be an array");
          data = new FloatList();
          floats(p, data, path + ".data");
        }
        case "parameters" -> binarySize = binaryDataSize(p, path + ".parameters");
        default -> p.skipChildren();
      }
    }
    expect(name != null, path + ".name: missing");
    expect("FP32".equals(datatype), path + ".datatype: " + (datatype == null ? "missing" : datatype + " is not FP32")
        + " (the bare server takes FP32 only)");
    expect(shape != null, path + ".shape: missing");
    long elements = elements(shape, path);
    expect(data == null || binarySize < 0, path + ": has both data and parameters.binary_data_size");
    expect(data != null || binarySize >= 0, path + ".data: missing (or send parameters.binary_data_size)");
    if (data != null) {
      expect(data.size == elements, path + ".data: has " + data.size + " elements but shape " + Arrays.toString(shape)
          + " needs " + elements);
    } else {
      expect(binarySize == elements * 4, path + ".parameters.binary_data_size: " + binarySize + " bytes, but FP32 shape "
          + Arrays.toString(shape) + " needs " + elements * 4);
    }
    inputs.add(new Input(name, shape, data == null ? null : data.toArray()));
    binarySizes.add(binarySize);
  }

  /** Fills the binary inputs from the bytes after the JSON header, checking they add up to the body. */
  private static List<Input> binaryTensors(byte[] body, int jsonLength, List<Input> inputs, List<Integer> sizes) {
    int pos = jsonLength;
    List<Input> out = new ArrayList<>(inputs.size());
    for (int i = 0; i < inputs.size(); i++) {
      Input in = inputs.get(i);
      int size = sizes.get(i);
      if (size < 0) {
        out.add(in);
        continue;
      }
      expect(size <= body.length - pos, "inputs[" + i + "].parameters.binary_data_size: " + size
          + " bytes, but only " + (body.length - pos) + " bytes of binary data remain in the body");
      float[] data = new float[size / 4];
      ByteBuffer.wrap(body, pos, size).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(data);
      out.add(new Input(in.name(), in.shape(), data));
      pos += size;
    }
    expect(pos == body.length, HEADER_LENGTH + ": " + (body.length - jsonLength)
        + " bytes follow the JSON header but the inputs' binary_data_size add up to " + (pos - jsonLength));
    return out;
  }

  /** Flat or nested numbers, flattened in row-major order. */
  private static void floats(JsonParser p, FloatList out, String path) throws IOException {
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      if (t == JsonToken.START_ARRAY) {
        floats(p, out, path);
      } else {
        expect(t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_NUMBER_INT,
            path + " element " + out.size + ": expected a number for FP32");
        out.add((float) p.getDoubleValue());
      }
    }
  }

  private static long[] shape(JsonParser p, String path) throws IOException {
    expect(p.currentToken() == JsonToken.START_ARRAY, path + ": must be an array of integers");
    long[] dims = new long[8];
    int n = 0;
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      expect(t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER,
          path + "[" + n + "]: must be an integer");
      expect(n < 64, path + ": more than 64 dimensions");
      if (n == dims.length) {
        dims = Arrays.copyOf(dims, n * 2);
      }
      dims[n++] = p.getLongValue();
    }
    return Arrays.copyOf(dims, n);
  }

  private static long elements(long[] shape, String path) {
    long n = 1;
    for (long d : shape) {
      expect(d >= 0, path + ".shape: negative dimension in " + Arrays.toString(shape));
      n *= d;
      expect(n <= Integer.MAX_VALUE / 4, path + ".shape: " + Arrays.toString(shape) + " is too large");
    }
    return n;
  }

  private static int binaryDataSize(JsonParser p, String path) throws IOException {
    expect(p.currentToken() == JsonToken.START_OBJECT, path + ": must be an object");
    int size = -1;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      JsonToken t = p.nextToken();
      if (key.equals("binary_data_size")) {
        expect(t == JsonToken.VALUE_NUMBER_INT && p.getLongValue() >= 0 && p.getLongValue() <= Integer.MAX_VALUE,
            path + ".binary_data_size: must be a non-negative integer");
        size = p.getIntValue();
      } else {
        p.skipChildren();
      }
    }
    return size;
  }

  private static boolean binaryDataOutput(JsonParser p) throws IOException {
    expect(p.currentToken() == JsonToken.START_OBJECT, "parameters: must be an object");
    boolean binary = false;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String key = p.currentName();
      JsonToken t = p.nextToken();
      if (key.equals("binary_data_output")) {
        expect(t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE, "parameters.binary_data_output: must be a boolean");
        binary = t == JsonToken.VALUE_TRUE;
      } else {
        p.skipChildren();
      }
    }
    return binary;
  }

  private static String string(JsonParser p, JsonToken t, String path) throws IOException {
    expect(t == JsonToken.VALUE_STRING, path + ": must be a string");
    return p.getText();
  }

  private static int jsonLength(int bodyLength, String headerLength) {
    if (headerLength == null) {
      return bodyLength;
    }
    long n;
    try {
      n = Long.parseLong(headerLength.trim());
    } catch (NumberFormatException e) {
      throw new BadRequest(HEADER_LENGTH + ": must be a non-negative integer, got '" + headerLength + "'");
    }
    expect(n >= 0 && n <= bodyLength, HEADER_LENGTH + ": " + n + " is outside the " + bodyLength + "-byte body");
    return (int) n;
  }

  private static void expect(boolean ok, String message) {
    if (!ok) {
      throw new BadRequest(message);
    }
  }

  /**
   * The answer to {@code request}: one FP32 output {@code output}, as JSON {@code data} or, if the request asked,
   * binary: for model {@link #ECHO} the first input (its shape and values), for any other of shape [1, 10] holding the
   * first input's first ten values (zero-padded).
   */
  public Response encode(String model, Request request) {
    Input first = request.inputs().get(0);
    boolean echo = ECHO.equals(model);
    float[] out = echo ? first.data() : Arrays.copyOf(first.data(), OUTPUT_SIZE);
    long[] shape = echo ? first.shape() : new long[] {1, OUTPUT_SIZE};
    boolean binary = request.binaryOutput();
    byte[] json;
    try (ByteArrayBuilder buf = new ByteArrayBuilder(256); JsonGenerator g = factory.createGenerator(buf)) {
      g.writeStartObject();
      g.writeStringField("model_name", model);
      if (!request.id().isEmpty()) {
        g.writeStringField("id", request.id());
      }
      g.writeArrayFieldStart("outputs");
      g.writeStartObject();
      g.writeStringField("name", "output");
      g.writeStringField("datatype", "FP32");
      g.writeFieldName("shape");
      g.writeArray(shape, 0, shape.length);
      if (binary) {
        g.writeObjectFieldStart("parameters");
        g.writeNumberField("binary_data_size", out.length * 4);
        g.writeEndObject();
      } else {
        g.writeArrayFieldStart("data");
        for (float f : out) {
          g.writeNumber(f);
        }
        g.writeEndArray();
      }
      g.writeEndObject();
      g.writeEndArray();
      g.writeEndObject();
      g.flush();
      json = buf.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (!binary) {
      return new Response(json, json.length, false);
    }
    ByteBuffer body = ByteBuffer.allocate(json.length + out.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    body.put(json);
    body.asFloatBuffer().put(out);
    return new Response(body.array(), json.length, true);
  }

  /** A growable float[] without boxing. */
  private static final class FloatList {
    float[] values = new float[64];
    int size;

    void add(float f) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = f;
    }

    float[] toArray() {
      return Arrays.copyOf(values, size);
    }
  }
}
