package io.kiln.testkit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import io.kiln.protocol.grpc.InferParameter;
import io.kiln.protocol.grpc.ModelInferRequest;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One OIP v2 inference request, built once and written in each of the protocol's forms: JSON
 * ({@link #json()}), the binary tensor extension ({@link #binary()}: a JSON header, then the raw tensors), and gRPC
 * ({@link #grpc(String)}: typed contents or raw). The tests' one way to write a well-formed request; a test of the
 * decoders themselves writes its bytes by hand.
 *
 * <pre>{@code
 * String body = OipRequest.fp32("x", new long[] {1, 2}, 1, 0).json();
 * OipRequest.create().id("r1").input(Input.bytes("text", new long[] {1}, "hello")).parameter("chunks", 3).json();
 * }</pre>
 *
 * <p>Immutable: each method returns a new request.
 */
public final class OipRequest {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** One input tensor: its name, datatype, shape and elements (numbers, booleans or, for BYTES, byte strings). */
  public record Input(String name, String datatype, long[] shape, List<Object> data) {

    public Input {
      shape = shape.clone();
      data = List.copyOf(data);
    }

    /** An FP32 input. */
    public static Input fp32(String name, long[] shape, float... values) {
      List<Object> data = new ArrayList<>(values.length);
      for (float v : values) {
        data.add(v);
      }
      return new Input(name, "FP32", shape, data);
    }

    /** An INT64 input. */
    public static Input int64(String name, long[] shape, long... values) {
      return new Input(name, "INT64", shape, Arrays.stream(values).boxed().map(Object.class::cast).toList());
    }

    /** An INT32 input. */
    public static Input int32(String name, long[] shape, int... values) {
      return new Input(name, "INT32", shape, Arrays.stream(values).boxed().map(Object.class::cast).toList());
    }

    /** A BYTES input of UTF-8 strings. */
    public static Input bytes(String name, long[] shape, String... values) {
      return new Input(name, "BYTES", shape, List.of((Object[]) values));
    }

    /** The elements as little-endian bytes (BYTES: each a 4-byte length, then the bytes), as the binary forms carry them. */
    public byte[] raw() {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      for (Object v : data) {
        ByteBuffer b;
        switch (datatype) {
          case "FP32" -> b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(((Number) v).floatValue());
          case "FP64" -> b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putDouble(((Number) v).doubleValue());
          case "INT64" -> b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(((Number) v).longValue());
          case "INT32" -> b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(((Number) v).intValue());
          case "BOOL" -> b = ByteBuffer.allocate(1).put((byte) (Boolean.TRUE.equals(v) ? 1 : 0));
          case "BYTES" -> {
            byte[] s = v.toString().getBytes(StandardCharsets.UTF_8);
            b = ByteBuffer.allocate(4 + s.length).order(ByteOrder.LITTLE_ENDIAN).putInt(s.length).put(s);
          }
          default -> throw new IllegalArgumentException("OipRequest: no raw form for " + datatype + " here");
        }
        out.writeBytes(b.array());
      }
      return out.toByteArray();
    }
  }

  /** The binary extension's form: the body, and the value of {@code Inference-Header-Content-Length}. */
  public record Binary(byte[] body, int headerLength) {
    /** The header value as HTTP carries it. */
    public String headerLengthValue() {
      return Integer.toString(headerLength);
    }
  }

  private final String id;
  private final List<Input> inputs;
  private final Map<String, Object> parameters;
  private final List<String> outputs;

  private OipRequest(String id, List<Input> inputs, Map<String, Object> parameters, List<String> outputs) {
    this.id = id;
    this.inputs = List.copyOf(inputs);
    this.parameters = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(parameters));
    this.outputs = List.copyOf(outputs);
  }

  /** A request with nothing in it yet. */
  public static OipRequest create() {
    return new OipRequest(null, List.of(), Map.of(), List.of());
  }

  /** A request of one FP32 input, the tests' most common. */
  public static OipRequest fp32(String name, long[] shape, float... values) {
    return create().input(Input.fp32(name, shape, values));
  }

  public OipRequest id(String requestId) {
    return new OipRequest(requestId, inputs, parameters, outputs);
  }

  public OipRequest input(Input in) {
    List<Input> more = new ArrayList<>(inputs);
    more.add(in);
    return new OipRequest(id, more, parameters, outputs);
  }

  /** A request parameter (a string, number or boolean). */
  public OipRequest parameter(String name, Object value) {
    Map<String, Object> more = new LinkedHashMap<>(parameters);
    more.put(name, value);
    return new OipRequest(id, inputs, more, outputs);
  }

  /** Asks for the named outputs only. */
  public OipRequest outputs(String... names) {
    return new OipRequest(id, inputs, parameters, List.of(names));
  }

  public List<Input> inputs() {
    return inputs;
  }

  /** The request as OIP JSON. */
  public String json() {
    return header(false).toString();
  }

  /** The request as OIP JSON bytes (UTF-8). */
  public byte[] jsonBytes() {
    return json().getBytes(StandardCharsets.UTF_8);
  }

  /** The request in the binary tensor extension: every input's data raw after the JSON header. */
  public Binary binary() {
    byte[] header = header(true).toString().getBytes(StandardCharsets.UTF_8);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(header);
    for (Input in : inputs) {
      out.writeBytes(in.raw());
    }
    return new Binary(out.toByteArray(), header.length);
  }

  /** The request as a gRPC ModelInfer message for {@code model}, tensors in their typed contents. */
  public ModelInferRequest grpc(String model) {
    ModelInferRequest.Builder b = grpcHead(model);
    for (Input in : inputs) {
      ModelInferRequest.InferInputTensor.Builder t = tensor(in);
      var c = io.kiln.protocol.grpc.InferTensorContents.newBuilder();
      for (Object v : in.data()) {
        switch (in.datatype()) {
          case "FP32" -> c.addFp32Contents(((Number) v).floatValue());
          case "FP64" -> c.addFp64Contents(((Number) v).doubleValue());
          case "INT64" -> c.addInt64Contents(((Number) v).longValue());
          case "INT32" -> c.addIntContents(((Number) v).intValue());
          case "BOOL" -> c.addBoolContents(Boolean.TRUE.equals(v));
          case "BYTES" -> c.addBytesContents(ByteString.copyFromUtf8(v.toString()));
          default -> throw new IllegalArgumentException("OipRequest: no gRPC contents for " + in.datatype() + " here");
        }
      }
      b.addInputs(t.setContents(c));
    }
    return b.build();
  }

  /** The request as a gRPC ModelInfer message for {@code model}, tensors in {@code raw_input_contents}. */
  public ModelInferRequest grpcRaw(String model) {
    ModelInferRequest.Builder b = grpcHead(model);
    for (Input in : inputs) {
      b.addInputs(tensor(in)).addRawInputContents(ByteString.copyFrom(in.raw()));
    }
    return b.build();
  }

  private ModelInferRequest.Builder grpcHead(String model) {
    ModelInferRequest.Builder b = ModelInferRequest.newBuilder().setModelName(model);
    if (id != null) {
      b.setId(id);
    }
    parameters.forEach((k, v) -> b.putParameters(k, parameter(v)));
    for (String o : outputs) {
      b.addOutputs(ModelInferRequest.InferRequestedOutputTensor.newBuilder().setName(o));
    }
    return b;
  }

  private static ModelInferRequest.InferInputTensor.Builder tensor(Input in) {
    ModelInferRequest.InferInputTensor.Builder t = ModelInferRequest.InferInputTensor.newBuilder()
        .setName(in.name()).setDatatype(in.datatype());
    for (long d : in.shape()) {
      t.addShape(d);
    }
    return t;
  }

  private static InferParameter parameter(Object v) {
    if (v instanceof Boolean bool) {
      return InferParameter.newBuilder().setBoolParam(bool).build();
    }
    if (v instanceof Integer || v instanceof Long) {
      return InferParameter.newBuilder().setInt64Param(((Number) v).longValue()).build();
    }
    if (v instanceof Number n) {
      return InferParameter.newBuilder().setDoubleParam(n.doubleValue()).build();
    }
    return InferParameter.newBuilder().setStringParam(v.toString()).build();
  }

  private ObjectNode header(boolean binary) {
    ObjectNode root = JSON.createObjectNode();
    if (id != null) {
      root.put("id", id);
    }
    ArrayNode ins = root.putArray("inputs");
    for (Input in : inputs) {
      ObjectNode t = ins.addObject().put("name", in.name()).put("datatype", in.datatype());
      ArrayNode shape = t.putArray("shape");
      for (long d : in.shape()) {
        shape.add(d);
      }
      if (binary) {
        t.putObject("parameters").put("binary_data_size", in.raw().length);
      } else {
        t.set("data", JSON.valueToTree(in.data()));
      }
    }
    if (!parameters.isEmpty()) {
      root.set("parameters", JSON.valueToTree(parameters));
    }
    if (!outputs.isEmpty()) {
      ArrayNode outs = root.putArray("outputs");
      outputs.forEach(o -> outs.addObject().put("name", o));
    }
    return root;
  }
}
