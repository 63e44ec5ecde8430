package io.kiln.pools.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.ModelUris;
import io.kiln.pools.Tensor;
import io.kiln.pools.spec.FieldKind;
import io.kiln.pools.spec.ModelField;
import io.kiln.pools.spec.ModelFields;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Teaches Jackson (and so the runtime's wire codec, which registers every module on the class path) the
 * pool types that are not plain records:
 *
 * <ul>
 *   <li>{@link Tensor} as {@code {name, datatype, shape, data}} with {@code data} the raw little-endian
 *       bytes: a CBOR byte string on the wire, base64 in JSON. Reading checks the byte count against the
 *       shape (the tensor's own constructor).</li>
 *   <li>{@link ModelSpec} as the fields its schema ({@link ModelFields}) lists, each under its component's name,
 *       the defaults left out, with its {@code uri} as the path's own string (Jackson's default would turn
 *       {@code builtin:identity} or a relative folder into an absolute {@code file:} URI of the sender's
 *       working directory); reading validates like the constructor.</li>
 * </ul>
 *
 * Registered through {@code META-INF/services/com.fasterxml.jackson.databind.Module}.
 */
public final class PoolsJacksonModule extends SimpleModule {

  public PoolsJacksonModule() {
    super("kiln-pools");
    addSerializer(Tensor.class, new TensorSerializer());
    addDeserializer(Tensor.class, new TensorDeserializer());
    addSerializer(ModelSpec.class, new SpecSerializer());
    addDeserializer(ModelSpec.class, new SpecDeserializer());
  }

  /**
   * A {@link ModelSpec} as an object of its fields ({@link ModelFields}), each under its component's name; a field
   * equal to its default is left out (a reader takes the default back).
   */
  private static final class SpecSerializer extends StdSerializer<ModelSpec> {
    SpecSerializer() {
      super(ModelSpec.class);
    }

    @Override
    public void serialize(ModelSpec spec, JsonGenerator g, SerializerProvider provider) throws IOException {
      g.writeStartObject();
      for (ModelField f : ModelFields.ALL) {
        Object value = ModelFields.get(f, spec);
        if (f.required() || !f.isDefault(value)) {
          provider.defaultSerializeField(f.component(), f.kind() == FieldKind.PATH
              ? ModelUris.canonical(value.toString()) : value, g);
        }
      }
      g.writeEndObject();
    }
  }

  /** Reads each field of {@link ModelFields} as its component's type; unknown fields are skipped. */
  private static final class SpecDeserializer extends StdDeserializer<ModelSpec> {
    SpecDeserializer() {
      super(ModelSpec.class);
    }

    @Override
    public ModelSpec deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonNode tree = ctxt.readTree(p);
      if (!tree.isObject()) {
        throw JsonMappingException.from(p, "a model spec is an object of its fields, got " + tree.getNodeType());
      }
      Map<ModelField, Object> values = new HashMap<>();
      for (ModelField f : ModelFields.ALL) {
        JsonNode node = tree.get(f.component());
        if (node == null || node.isNull()) {
          continue;
        }
        if (f.kind() == FieldKind.PATH) {
          values.put(f, Path.of(ctxt.readTreeAsValue(node, String.class)));
        } else {
          JavaType type = ctxt.getTypeFactory().constructType(ModelFields.javaType(f));
          values.put(f, ctxt.readTreeAsValue(node, type));
        }
      }
      return ModelFields.build(values); // validates like the constructor: IllegalArgumentException naming the field
    }
  }

  private static final class TensorSerializer extends StdSerializer<Tensor> {
    TensorSerializer() {
      super(Tensor.class);
    }

    @Override
    public void serialize(Tensor t, JsonGenerator g, SerializerProvider provider) throws IOException {
      g.writeStartObject();
      g.writeStringField("name", t.name());
      g.writeStringField("datatype", t.datatype().name());
      g.writeFieldName("shape");
      g.writeArray(t.shape(), 0, t.shape().length);
      g.writeBinaryField("data", t.data());
      g.writeEndObject();
    }
  }

  private static final class TensorDeserializer extends StdDeserializer<Tensor> {
    TensorDeserializer() {
      super(Tensor.class);
    }

    @Override
    public Tensor deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      if (!p.isExpectedStartObjectToken()) {
        return (Tensor) ctxt.handleUnexpectedToken(Tensor.class, p);
      }
      String name = null;
      DataType type = null;
      long[] shape = null;
      byte[] data = null;
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String field = p.currentName();
        p.nextToken();
        switch (field) {
          case "name" -> name = p.getValueAsString();
          case "datatype" -> {
            String text = p.getValueAsString();
            type = DataType.parse(text).orElseThrow(() -> JsonMappingException.from(p, "unknown tensor datatype '" + text + "'"));
          }
          case "shape" -> shape = ctxt.readValue(p, long[].class);
          case "data" -> data = p.getBinaryValue();
          default -> p.skipChildren();
        }
      }
      if (name == null || type == null || shape == null || data == null) {
        throw JsonMappingException.from(p, "a tensor needs name, datatype, shape and data");
      }
      try {
        return new Tensor(name, type, shape, data);
      } catch (IllegalArgumentException e) {
        throw JsonMappingException.from(p, e.getMessage(), e);
      }
    }
  }
}
