package io.kiln.gateway.impl;

import io.kiln.pools.HalfFloats;
import io.kiln.gateway.ModelInfo;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.RequestValidator;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.ValidatedRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON of Triton's generate extension. Request: one object whose fields are the model's inputs by name
 * (a scalar or an array, nested as the input's shape; missing leading dimensions are 1: one row), plus optional
 * {@code id} and {@code parameters} (an object of scalars, passed through as the request's parameters); one row
 * per request. Response (one per chunk): {@code model_name}, {@code model_version}, {@code id} when given, and
 * each output by name: its only element as a scalar, or its elements as a flat array (BYTES as UTF-8 strings).
 * {@link #gathered} is {@code generate}'s one answer: each output's elements over all chunks in order, as one
 * flat array, and a BYTES output's strings joined into one string (generated text). Stateless.
 */
final class GenerateCodec {

  private static final int MAX_ELEMENTS = 16 * 1024 * 1024;

  private GenerateCodec() {
  }

  /** @throws InferenceException INVALID_INPUT naming the field that is wrong */
  static ValidatedRequest decode(ModelInfo model, Buffer body) {
    JsonObject json;
    try {
      json = body == null || body.length() == 0 ? null : new JsonObject(body);
    } catch (DecodeException | ClassCastException e) {
      throw InferenceException.invalid("request body is not a JSON object: " + e.getMessage());
    }
    if (json == null) {
      throw InferenceException.invalid("request body is empty; expected a JSON object of the model's inputs");
    }
    Map<String, TensorSpec> inputs = new LinkedHashMap<>();
    for (TensorSpec s : model.signature().inputs()) {
      inputs.put(s.name(), s);
    }
    String id = "";
    Map<String, Object> params = new LinkedHashMap<>();
    List<Tensor> tensors = new ArrayList<>();
    for (Map.Entry<String, Object> e : json) {
      String field = e.getKey();
      if (field.equals("id")) {
        if (!(e.getValue() instanceof String s)) {
          throw InferenceException.invalid("id: must be a string");
        }
        id = s;
      } else if (field.equals("parameters")) {
        if (!(e.getValue() instanceof JsonObject p)) {
          throw InferenceException.invalid("parameters: must be an object");
        }
        for (Map.Entry<String, Object> pe : p) {
          Object v = pe.getValue();
          if (!(v instanceof String || v instanceof Number || v instanceof Boolean)) {
            throw InferenceException.invalid("parameters." + pe.getKey() + ": must be a string, number or boolean");
          }
          params.put(pe.getKey(), v);
        }
      } else {
        TensorSpec spec = inputs.get(field);
        if (spec == null) {
          throw InferenceException.invalid(field + ": model '" + model.name() + "' has no input of that name (inputs: "
              + inputs.keySet() + ")");
        }
        tensors.add(tensor(spec, e.getValue()));
      }
    }
    for (String name : inputs.keySet()) {
      if (tensors.stream().noneMatch(t -> t.name().equals(name))) {
        throw InferenceException.invalid(name + ": missing input of model '" + model.name() + "'");
      }
    }
    return new RequestValidator(model.name(), model.signature(), model.maxBatchSize())
        .validate(new InferenceRequest(id, tensors, List.of(), params));
  }

  private static Tensor tensor(TensorSpec spec, Object value) {
    List<Long> dims = new ArrayList<>();
    List<Object> flat = new ArrayList<>();
    flatten(spec.name(), value, 0, dims, flat);
    while (dims.size() < spec.shape().length) { // a scalar or a row without its batch dimension: one row
      dims.add(0, 1L);
    }
    long[] shape = dims.stream().mapToLong(Long::longValue).toArray();
    return new Tensor(spec.name(), spec.datatype(), shape, bytes(spec, flat));
  }

  private static void flatten(String field, Object v, int depth, List<Long> dims, List<Object> out) {
    if (v instanceof JsonArray a) {
      if (depth == dims.size()) {
        dims.add((long) a.size());
      } else if (dims.get(depth) != a.size()) {
        throw InferenceException.invalid(field + ": a ragged array (rows of different lengths)");
      }
      for (Object x : a) {
        flatten(field, x, depth + 1, dims, out);
      }
    } else {
      if (depth != dims.size() && !(depth == 0 && dims.isEmpty())) {
        throw InferenceException.invalid(field + ": a ragged array (values and arrays mixed)");
      }
      if (out.size() >= MAX_ELEMENTS) {
        throw new InferenceException(InferenceException.Kind.TOO_LARGE, field + ": more than " + MAX_ELEMENTS
            + " elements");
      }
      out.add(v);
    }
  }

  private static byte[] bytes(TensorSpec spec, List<Object> values) {
    DataType type = spec.datatype();
    String field = spec.name();
    if (type == DataType.BYTES) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      for (Object v : values) {
        if (!(v instanceof String s)) {
          throw InferenceException.invalid(field + ": BYTES elements must be strings");
        }
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(b.length).array());
        out.writeBytes(b);
      }
      return out.toByteArray();
    }
    if (type == DataType.FP16 || type == DataType.BF16) {
      throw InferenceException.invalid(field + ": datatype " + type + " is not supported by generate; use infer");
    }
    ByteBuffer buf = ByteBuffer.allocate(values.size() * type.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
    for (Object v : values) {
      if (type == DataType.BOOL) {
        if (!(v instanceof Boolean b)) {
          throw InferenceException.invalid(field + ": BOOL elements must be true or false");
        }
        buf.put((byte) (b ? 1 : 0));
        continue;
      }
      if (!(v instanceof Number n)) {
        throw InferenceException.invalid(field + ": " + type + " elements must be numbers, got " + v);
      }
      switch (type) {
        case FP32 -> buf.putFloat(n.floatValue());
        case FP64 -> buf.putDouble(n.doubleValue());
        case INT8, UINT8 -> buf.put(n.byteValue());
        case INT16, UINT16 -> buf.putShort(n.shortValue());
        case INT32, UINT32 -> buf.putInt(n.intValue());
        default -> buf.putLong(n.longValue());
      }
    }
    return buf.array();
  }

  /** One chunk as its JSON object. */
  static JsonObject chunk(InferenceResponse r) {
    JsonObject o = header(r);
    for (Tensor t : r.outputs()) {
      List<Object> values = elements(t);
      o.put(t.name(), values.size() == 1 ? values.get(0) : new JsonArray(values));
    }
    return o;
  }

  /** {@code generate}'s one answer from all chunks (see the class comment); null fields when there were none. */
  static JsonObject gathered(List<InferenceResponse> chunks, String model, String version, String id) {
    JsonObject o = new JsonObject().put("model_name", model).put("model_version", version);
    if (!id.isEmpty()) {
      o.put("id", id);
    }
    Map<String, List<Object>> all = new LinkedHashMap<>();
    Map<String, Boolean> text = new LinkedHashMap<>();
    for (InferenceResponse r : chunks) {
      for (Tensor t : r.outputs()) {
        all.computeIfAbsent(t.name(), k -> new ArrayList<>()).addAll(elements(t));
        text.put(t.name(), t.datatype() == DataType.BYTES);
      }
    }
    for (Map.Entry<String, List<Object>> e : all.entrySet()) {
      if (text.get(e.getKey())) {
        StringBuilder sb = new StringBuilder();
        e.getValue().forEach(sb::append);
        o.put(e.getKey(), sb.toString());
      } else {
        o.put(e.getKey(), new JsonArray(e.getValue()));
      }
    }
    return o;
  }

  private static JsonObject header(InferenceResponse r) {
    JsonObject o = new JsonObject().put("model_name", r.modelName()).put("model_version", r.modelVersion());
    if (!r.id().isEmpty()) {
      o.put("id", r.id());
    }
    return o;
  }

  static List<Object> elements(Tensor t) {
    ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
    List<Object> out = new ArrayList<>();
    while (b.hasRemaining()) {
      switch (t.datatype()) {
        case BOOL -> out.add(b.get() != 0);
        case UINT8 -> out.add(b.get() & 0xff);
        case INT8 -> out.add((int) b.get());
        case UINT16 -> out.add(b.getShort() & 0xffff);
        case INT16 -> out.add((int) b.getShort());
        case UINT32 -> out.add(b.getInt() & 0xffffffffL);
        case INT32 -> out.add(b.getInt());
        case INT64, UINT64 -> out.add(b.getLong());
        case FP32 -> out.add(b.getFloat());
        case FP64 -> out.add(b.getDouble());
        case FP16 -> out.add(HalfFloats.fromFp16(b.getShort()));
        case BYTES -> {
          int n = b.getInt();
          byte[] s = new byte[n];
          b.get(s);
          out.add(new String(s, StandardCharsets.UTF_8));
        }
        default -> {
          return List.of("<" + t.datatype() + " not shown>");
        }
      }
    }
    return out;
  }
}
