package io.kiln.pools.impl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.deser.std.StdDelegatingDeserializer;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdDelegatingSerializer;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import com.fasterxml.jackson.databind.util.StdConverter;
import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Teaches Jackson (and so the runtime's wire codec, which registers every module on the class path) the
 * pool types that are not plain records:
 *
 * <ul>
 *   <li>{@link Tensor} as {@code {name, datatype, shape, data}} with {@code data} the raw little-endian
 *       bytes: a CBOR byte string on the wire, base64 in JSON. Reading checks the byte count against the
 *       shape (the tensor's own constructor).</li>
 *   <li>{@link ModelSpec} with its {@code uri} as the path's own string (Jackson's default would turn
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
    addSerializer(ModelSpec.class, new StdDelegatingSerializer(new SpecToJson()));
    addDeserializer(ModelSpec.class, new StdDelegatingDeserializer<>(new JsonToSpec()));
  }

  /** The JSON shape of a {@link ModelSpec}. */
  record ModelSpecJson(String uri, String engine, String format, String architecture, List<TensorSpec> inputs,
                       List<TensorSpec> outputs, List<Integer> warmupBatchSizes, int intraOpThreads,
                       int interOpThreads, PythonOptions python, boolean allowCpuFallback, boolean streaming,
                       @com.fasterxml.jackson.annotation.JsonInclude(
                           com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL) String sha256,
                       @com.fasterxml.jackson.annotation.JsonInclude(
                           com.fasterxml.jackson.annotation.JsonInclude.Include.NON_EMPTY)
                       java.util.Map<String, String> options,
                       @com.fasterxml.jackson.annotation.JsonInclude(
                           com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL)
                       io.kiln.pools.SequenceSpec sequence) {
  }

  private static final class SpecToJson extends StdConverter<ModelSpec, ModelSpecJson> {
    @Override
    public ModelSpecJson convert(ModelSpec s) {
      return new ModelSpecJson(io.kiln.pools.ModelUris.canonical(s.uri().toString()), s.engine(), s.format(), s.architecture(), s.inputs(), s.outputs(),
          s.warmupBatchSizes(), s.intraOpThreads(), s.interOpThreads(), s.python(), s.allowCpuFallback(),
          s.streaming(), s.sha256().isEmpty() ? null : s.sha256(), s.options(), s.sequence());
    }
  }

  private static final class JsonToSpec extends StdConverter<ModelSpecJson, ModelSpec> {
    @Override
    public ModelSpec convert(ModelSpecJson j) {
      if (j.uri() == null) {
        throw new IllegalArgumentException("uri: required");
      }
      return new ModelSpec(Path.of(j.uri()), j.engine(), j.format(), j.architecture(),
          j.inputs() == null ? List.of() : j.inputs(), j.outputs(), j.warmupBatchSizes(), j.intraOpThreads(),
          j.interOpThreads(), j.python(), j.allowCpuFallback(), j.streaming(), j.sha256(), j.options(), j.sequence());
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
