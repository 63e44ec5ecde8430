package io.kiln.serve.impl;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.spec.ModelFields;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads a model's {@code python} section ({@code class}, {@code interpreter}, {@code config}, {@code env},
 * {@code startup_timeout_ms}, {@code request_timeout_ms}) into {@link PythonOptions}, and checks without
 * starting Python that the model folder's {@code model.py} defines the class. Not thread-safe.
 */
final class PythonReader {

  static final String SECTION = ModelFields.PYTHON.yaml();
  static final String MODEL_FILE = io.kiln.pools.ModelFolders.PYTHON_FILE;
  private static final int MAX_CONFIG_DEPTH = 16;

  private final Reading reading;
  private final Problems problems;

  PythonReader(Reading reading) {
    this.reading = reading;
    this.problems = reading.problems();
  }

  /**
   * The options of a {@value ModelSpec#ENGINE_PYTHON} model (defaults without a section), or null when
   * something is wrong (reported); null too, with a problem, for a section on another engine.
   */
  PythonOptions read(MappingReader model, String engine) {
    MappingReader p = model.section(SECTION);
    if (!ModelSpec.ENGINE_PYTHON.equals(engine)) {
      if (p.present()) {
        problems.at(model.keyAt(SECTION), model.path(SECTION), ModelFields.PYTHON.ownerProblem(engine));
      }
      p.entries(); // its fields are not reported one by one
      p.finish();
      return null;
    }
    int before = problems.count();
    PythonOptions.Builder b = PythonOptions.builder();
    b.className(p.text("class", null)).interpreter(p.text("interpreter", null));
    Node config = p.value("config");
    if (config != null) {
      Object value = plain(config, p.path("config"), 0);
      if (value instanceof Map<?, ?> m) {
        @SuppressWarnings("unchecked")
        Map<String, Object> map = (Map<String, Object>) m;
        b.config(map);
      } else if (value != null || !Reading.isTag(config, Tag.NULL)) {
        problems.at(config, p.path("config"), "must be a mapping of settings, got " + Reading.describe(config));
      }
    }
    MappingReader env = p.section("env");
    Map<String, String> vars = new LinkedHashMap<>();
    for (NodeTuple t : env.entries()) {
      String key = reading.text(t.getKeyNode(), env.path());
      String value = reading.text(t.getValueNode(), env.path() + "." + key);
      if (key != null && value != null) {
        vars.put(key, value);
      }
    }
    env.finish();
    b.env(vars);
    Duration startup = p.millis("startup_timeout_ms", null, true);
    Duration request = p.millis("request_timeout_ms", null, true);
    p.finish();
    if (problems.count() > before) {
      return null;
    }
    try {
      if (startup != null) {
        b.startupTimeout(startup);
      }
      if (request != null) {
        b.requestTimeout(request);
      }
      return b.build();
    } catch (IllegalArgumentException e) {
      // PythonOptions names the field as python.<field>: report it at the section.
      problems.at(p.present() ? p.node() : model.node(), model.path(SECTION), e.getMessage());
      return null;
    }
  }

  /**
   * Checks that {@code folder} holds {@value #MODEL_FILE} defining {@code className} at its top level, as far
   * as text can tell (a {@code class Name} line); reported at {@code at}.
   */
  void checkModelFile(Path folder, String className, Node at, String path) {
    Path file = folder.resolve(MODEL_FILE);
    if (!Files.isRegularFile(file)) {
      problems.at(at, path, "model folder " + folder + " has no " + MODEL_FILE + " (a Python model's class lives there)");
      return;
    }
    String text;
    try {
      text = Files.readString(file);
    } catch (IOException e) {
      problems.at(at, path, "cannot read " + file + ": " + e.getMessage());
      return;
    }
    Pattern definition = Pattern.compile("(?m)^class\\s+" + Pattern.quote(className) + "\\s*[(:]");
    if (!definition.matcher(text).find()) {
      problems.at(at, path, file + " defines no top-level class " + className
          + (className.equals(PythonOptions.DEFAULT_CLASS) ? " (set python.class to the class to serve)" : ""));
    }
  }

  /** A YAML value as plain Java: maps, lists, strings, longs, doubles, booleans, null; null if wrong (reported). */
  private Object plain(Node node, String path, int depth) {
    if (depth > MAX_CONFIG_DEPTH) {
      problems.at(node, path, "nests deeper than " + MAX_CONFIG_DEPTH + " levels");
      return null;
    }
    if (node instanceof MappingNode m) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (NodeTuple t : m.getValue()) {
        // Keys as written: YAML 1.1 reads a bare on/off/yes/no as a boolean, but a settings key is a name.
        String key = t.getKeyNode() instanceof ScalarNode k ? k.getValue() : null;
        if (key == null) {
          problems.at(t.getKeyNode(), path, "keys must be plain names, got " + Reading.describe(t.getKeyNode()));
        } else {
          out.put(key, plain(t.getValueNode(), path + "." + key, depth + 1));
        }
      }
      return out;
    }
    if (node instanceof SequenceNode s) {
      List<Object> out = new ArrayList<>();
      for (int i = 0; i < s.getValue().size(); i++) {
        out.add(plain(s.getValue().get(i), path + "[" + i + "]", depth + 1));
      }
      return out;
    }
    ScalarNode scalar = (ScalarNode) node;
    String v = scalar.getValue();
    Tag tag = scalar.getTag();
    try {
      if (tag.equals(Tag.NULL)) {
        return null;
      } else if (tag.equals(Tag.BOOL)) {
        return Boolean.parseBoolean(v.toLowerCase(java.util.Locale.ROOT));
      } else if (tag.equals(Tag.INT)) {
        return Long.parseLong(v.replace("_", ""));
      } else if (tag.equals(Tag.FLOAT)) {
        return Double.parseDouble(v.replace("_", ""));
      }
    } catch (NumberFormatException e) {
      problems.at(node, path, "'" + v + "' is not a number Kiln can pass on; quote it to pass it as text");
      return null;
    }
    return v;
  }
}
