package io.kiln.serve;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.Module;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import io.kiln.serve.impl.JsonDocuments;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.impl.SpecJsonWriter;
import io.kiln.serve.impl.SpecReader;
import java.io.IOException;
import java.util.List;
import java.util.function.BiFunction;
import org.yaml.snakeyaml.nodes.Node;

/**
 * JSON form of deployment specs, for the desired state the controller keeps in Hazelcast, the management
 * API and {@code kiln status --json}. The JSON uses the YAML schema's field names with every default
 * filled in, so {@code {"deployments": [...]}} written by {@link #toJson(List)} is itself a valid
 * deployment document. Written with Jackson; read with Jackson into the same validating reader as YAML,
 * so malformed or tampered JSON is refused with every problem, line and column. Model paths are taken as
 * written (they are absolute once loaded from YAML) and not checked for existence.
 *
 * <p>Stateless and thread-safe; no Java serialization is involved.
 */
public final class SpecJson {

  /** The file name that problems found in JSON text carry. */
  public static final String SOURCE = "<json>";

  private SpecJson() {
  }

  public static ObjectNode toTree(DeploymentSpec spec) {
    return SpecJsonWriter.deployment(spec);
  }

  /** Compact JSON of one spec. */
  public static String toJson(DeploymentSpec spec) {
    return toTree(spec).toString();
  }

  /** {@code {"deployments": [...]}}. */
  public static ObjectNode toTree(List<DeploymentSpec> specs) {
    return SpecJsonWriter.file(specs);
  }

  public static String toJson(List<DeploymentSpec> specs) {
    return toTree(specs).toString();
  }

  /**
   * One spec from JSON written by {@link #toJson(DeploymentSpec)} (or by hand, in the same schema).
   *
   * @throws DeploymentValidationException listing every problem, positioned in {@code json}
   */
  public static DeploymentSpec fromJson(String json) {
    return read(json, (reader, root) -> reader.readDeployment(root, ""));
  }

  /**
   * Specs from {@code {"deployments": [...]}}, as written by {@link #toJson(List)}.
   *
   * @throws DeploymentValidationException listing every problem, positioned in {@code json}
   */
  public static List<DeploymentSpec> listFromJson(String json) {
    return read(json, SpecReader::readFile);
  }

  /**
   * A Jackson module that (de)serializes {@link DeploymentSpec} in this form and writes {@link Plan}s, for
   * code that holds an {@code ObjectMapper}. Deserialization failures surface as
   * {@link JsonMappingException}s whose cause is the {@link DeploymentValidationException}.
   */
  public static Module module() {
    SimpleModule module = new SimpleModule("kiln-serve");
    module.addSerializer(DeploymentSpec.class, new StdSerializer<>(DeploymentSpec.class) {
      @Override
      public void serialize(DeploymentSpec value, JsonGenerator gen, SerializerProvider provider) throws IOException {
        gen.writeTree(toTree(value));
      }
    });
    module.addSerializer(Plan.class, new StdSerializer<>(Plan.class) {
      @Override
      public void serialize(Plan value, JsonGenerator gen, SerializerProvider provider) throws IOException {
        gen.writeTree(value.toTree());
      }
    });
    module.addDeserializer(DeploymentSpec.class, new StdDeserializer<>(DeploymentSpec.class) {
      @Override
      public DeploymentSpec deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
        String json = p.readValueAsTree().toString();
        try {
          return fromJson(json);
        } catch (DeploymentValidationException e) {
          throw JsonMappingException.from(p, "invalid deployment spec:\n" + e.getMessage(), e);
        }
      }
    });
    return module;
  }

  private static <T> T read(String json, BiFunction<SpecReader, Node, T> how) {
    Problems problems = new Problems(SOURCE);
    T result = null;
    if (json.length() > DeploymentLoader.DEFAULT_MAX_BYTES) {
      problems.at(1, 1, "", "the JSON is " + json.length() + " characters; the limit is "
          + DeploymentLoader.DEFAULT_MAX_BYTES);
      problems.throwIfAny();
    }
    try {
      Node root = JsonDocuments.parse(json, problems);
      if (root == null) {
        problems.at(1, 1, "", "the JSON is empty");
      } else {
        result = how.apply(new SpecReader(problems, new SpecReader.Options(null, false)), root);
      }
    } catch (Problems.Abort stop) {
      // Reading stopped early; the problems say why.
    }
    problems.throwIfAny();
    return result;
  }
}
