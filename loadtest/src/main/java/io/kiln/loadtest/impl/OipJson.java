package io.kiln.loadtest.impl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.loadtest.TensorData;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/** Reads and writes the JSON side of Open Inference Protocol v2 requests. Stateless and thread-safe. */
public final class OipJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private OipJson() {
  }

  /**
   * Inputs as raw tensors, or why they have none (a tensor problem is not fatal: the JSON may be
   * deliberately invalid to load-test error paths).
   */
  public record Parsed(List<TensorData> inputs, String rawUnavailable) {
  }

  /** @throws IllegalArgumentException if the body is not JSON or has no {@code inputs} array */
  public static Parsed parse(byte[] json) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("not JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject() || !root.path("inputs").isArray() || root.path("inputs").isEmpty()) {
      throw new IllegalArgumentException("not an OIP v2 inference request: expected an object with a non-empty 'inputs' array");
    }
    List<TensorData> inputs = new ArrayList<>();
    for (JsonNode input : root.get("inputs")) {
      try {
        inputs.add(toTensor(input));
      } catch (IllegalArgumentException e) {
        return new Parsed(List.of(), e.getMessage());
      }
    }
    return new Parsed(List.copyOf(inputs), null);
  }

  private static TensorData toTensor(JsonNode input) {
    String name = input.path("name").asText("");
    String datatype = input.path("datatype").asText("");
    if (name.isEmpty() || datatype.isEmpty() || !input.path("shape").isArray()) {
      throw new IllegalArgumentException("an input lacks name, datatype or shape");
    }
    long[] shape = new long[input.get("shape").size()];
    for (int i = 0; i < shape.length; i++) {
      shape[i] = input.get("shape").get(i).asLong();
    }
    int width;
    try {
      width = TensorData.elementWidth(datatype);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("input '" + name + "': " + e.getMessage() + "; only http-json can send it");
    }
    if (datatype.equals("FP16") || datatype.equals("BF16")) {
      throw new IllegalArgumentException("input '" + name + "': " + datatype + " JSON data is not converted; only http-json can send it");
    }
    List<JsonNode> flat = new ArrayList<>();
    flatten(input.path("data"), flat);
    long expected = TensorData.elementCount(shape);
    if (flat.size() != expected) {
      throw new IllegalArgumentException("input '" + name + "': " + flat.size() + " data elements for shape of " + expected);
    }
    ByteBuffer raw = ByteBuffer.allocate(Math.multiplyExact(flat.size(), width)).order(ByteOrder.LITTLE_ENDIAN);
    for (JsonNode v : flat) {
      switch (datatype) {
        case "BOOL" -> raw.put((byte) (v.asBoolean() ? 1 : 0));
        case "INT8", "UINT8" -> raw.put((byte) v.asInt());
        case "INT16", "UINT16" -> raw.putShort((short) v.asInt());
        case "INT32", "UINT32" -> raw.putInt((int) v.asLong());
        case "INT64" -> raw.putLong(v.asLong());
        case "UINT64" -> raw.putLong(v.isBigInteger() ? v.bigIntegerValue().longValue() : v.asLong());
        case "FP32" -> raw.putFloat((float) v.asDouble());
        case "FP64" -> raw.putDouble(v.asDouble());
        default -> throw new IllegalArgumentException("input '" + name + "': unsupported datatype " + datatype);
      }
    }
    return new TensorData(name, datatype, shape, raw.array());
  }

  private static void flatten(JsonNode node, List<JsonNode> out) {
    if (node.isArray()) {
      for (JsonNode child : node) {
        flatten(child, out);
      }
    } else if (!node.isMissingNode() && !node.isNull()) {
      out.add(node);
    }
  }

  /** A JSON request with one FP32 input; values written with {@link Float#toString} so they round-trip. */
  public static byte[] fp32Request(String name, long[] shape, float[] values) {
    StringBuilder sb = new StringBuilder(values.length * 12 + 128);
    sb.append("{\"inputs\":[{\"name\":");
    sb.append(quote(name));
    sb.append(",\"shape\":[");
    for (int i = 0; i < shape.length; i++) {
      sb.append(i == 0 ? "" : ",").append(shape[i]);
    }
    sb.append("],\"datatype\":\"FP32\",\"data\":[");
    for (int i = 0; i < values.length; i++) {
      sb.append(i == 0 ? "" : ",").append(values[i]);
    }
    sb.append("]}]}");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The JSON header of a binary-extension request: every input with {@code binary_data_size} and no
   * {@code data}; the raw bytes follow it in input order.
   */
  public static byte[] binaryHeader(List<TensorData> inputs) {
    ObjectNode root = MAPPER.createObjectNode();
    ArrayNode arr = root.putArray("inputs");
    for (TensorData t : inputs) {
      ObjectNode in = arr.addObject();
      in.put("name", t.name());
      ArrayNode shape = in.putArray("shape");
      for (long d : t.shape()) {
        shape.add(d);
      }
      in.put("datatype", t.datatype());
      in.putObject("parameters").put("binary_data_size", t.byteSize());
    }
    try {
      return MAPPER.writeValueAsBytes(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** {@code 1x3x224x224}. */
  public static String shapeLabel(long[] shape) {
    StringJoiner j = new StringJoiner("x");
    for (long d : shape) {
      j.add(Long.toString(d));
    }
    return j.toString();
  }

  private static String quote(String s) {
    try {
      return MAPPER.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
