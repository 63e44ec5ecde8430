package io.kiln.serve.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.ModelUris;
import io.kiln.pools.PythonOptions;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.spec.ModelField;
import io.kiln.pools.spec.ModelFields;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads a deployment's {@code model} section into model-pools' {@link ModelSpec} by walking its schema
 * ({@link ModelFields}): the URI (resolved against the YAML file's folder and, when asked, checked to exist) and the
 * engine first, then each field by its kind, then the rules between fields. Not thread-safe.
 */
final class ModelReader {

  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://.*");
  private static final List<String> DATATYPES = java.util.Arrays.stream(DataType.values()).map(DataType::name).toList();

  private final Reading reading;
  private final Problems problems;
  private final SpecReader.Options options;

  ModelReader(Reading reading, SpecReader.Options options) {
    this.reading = reading;
    this.problems = reading.problems();
    this.options = options;
  }

  /**
   * The model, or null if anything in it is wrong (reported). The engine and uri are read first (the other fields
   * are judged by them); then every field of {@link ModelFields} placed in the model section, by its kind: text,
   * booleans, integers, names and mappings alike, tensors, integer lists and sections by their readers here.
   *
   * @param maxBatchSize the deployment's batch limit that warm-up batches must respect, null if unknown
   */
  ModelSpec read(MappingReader m, Integer maxBatchSize) {
    int before = problems.count();
    String engine = m.has("engine") ? engine(m) : EngineDetection.detect(m.text("uri", null), options).orElse(null);
    if (engine == null && !m.has("engine")) {
      engine(m); // reports the missing field, saying what detection needs
    }
    String uri = uri(m, engine);
    boolean engineSignature = engine != null && uri != null && defaultSignature(engine, uri);
    Map<ModelField, Object> values = new HashMap<>();
    Map<String, MappingReader> sections = new LinkedHashMap<>();
    for (ModelField f : ModelFields.at(ModelField.Place.MODEL)) {
      if (f != ModelFields.URI && f != ModelFields.ENGINE) {
        values.put(f, field(m, f, sections, engine, engineSignature, maxBatchSize));
      }
    }
    crossChecks(m, values, engine, uri);
    PythonOptions python = (PythonOptions) values.get(ModelFields.PYTHON);
    if (python != null && uri != null && options.checkModelPaths() && !ModelUris.isRemote(uri)) {
      new PythonReader(reading).checkModelFile(Path.of(uri), python.className(), m.at("uri"), m.path("uri"));
    }
    sections.values().forEach(MappingReader::finish);
    m.finish();
    if (problems.count() > before || !m.present()) {
      return null;
    }
    values.put(ModelFields.URI, Path.of(uri.trim()));
    values.put(ModelFields.ENGINE, engine);
    try {
      return ModelFields.build(values);
    } catch (IllegalArgumentException e) {
      // A rule of the model spec the checks above do not restate (e.g. an unknown built-in model); an engine's
      // option problem ("options.max_num_seqs: ...") is reported at that option.
      String message = e.getMessage();
      String option = message.startsWith("options.") ? message.substring(8).split("[:\\s]", 2)[0] : null;
      MappingReader o = m.section("options");
      if (option != null && o.has(option)) {
        String problem = message.substring(message.indexOf(':') + 1).trim();
        problems.at(problem.startsWith("unknown option") ? o.keyAt(option) : o.at(option), o.path(option), problem);
      } else {
        problems.at(m.node(), m.path(), message);
      }
      return null;
    }
  }

  /** One field's value: its default when absent, null when wrong (reported). */
  private Object field(MappingReader m, ModelField f, Map<String, MappingReader> sections, String engine,
                       boolean engineSignature, Integer maxBatchSize) {
    MappingReader s = f.section().isEmpty() ? m : sections.computeIfAbsent(f.section(), m::section);
    String key = f.key();
    return switch (f.kind()) {
      case TEXT -> {
        String text = s.text(key, null);
        if (text != null && f.rule() != null) {
          check(s.at(key), s.path(key), f.rule().apply(text));
        }
        yield text;
      }
      case BOOL -> s.bool(key, (Boolean) f.defaultValue());
      // In a section given without it, a count takes its least value (threads: {intra_op: 2} runs 1 inter-op thread).
      case INT -> s.integer(key, s.present() && !f.section().isEmpty() ? (int) f.min() : (Integer) f.defaultValue(),
          (int) f.min(), (int) f.max());
      case ENUM -> choice(s, f);
      case MAP -> map(s.section(key));
      case TENSORS -> engineSignature && !s.has(key) ? List.of() : tensors(s, key.substring(0, key.length() - 1));
      case INT_LIST -> integers(s, f, maxBatchSize);
      case SECTION -> section(m, f, engine);
      case PATH -> throw new IllegalStateException("no reader for a path field but uri: " + f.yaml());
    };
  }

  /** The rules between fields: the format and architecture against the engine, the sha256 and streaming vs the uri. */
  private void crossChecks(MappingReader m, Map<ModelField, Object> values, String engine, String uri) {
    String format = (String) values.get(ModelFields.FORMAT);
    boolean formatOk = !m.has("format")
        || format != null && (engine == null || check(m.at("format"), m.path("format"), Rules.formatFits(engine, format)));
    String architecture = (String) values.get(ModelFields.ARCHITECTURE);
    if (formatOk) {
      String message = Rules.architectureFits(format == null ? ModelSpec.FORMAT_AUTO : format,
          architecture == null ? "" : architecture);
      check(architecture != null ? m.keyAt("architecture") : m.at("format"), m.path("architecture"), message);
    }
    String sha256 = values.get(ModelFields.SHA256) == null ? null : ((String) values.get(ModelFields.SHA256)).trim();
    if (uri != null && (sha256 != null || !m.has("sha256"))) {
      String problem = ModelUris.sha256Problem(uri, sha256);
      if (problem != null) {
        problems.at(m.has("sha256") ? m.at("sha256") : m.at("uri"), m.path("sha256"), problem);
      }
    }
    if (Boolean.TRUE.equals(values.get(ModelFields.STREAMING)) && engine != null && uri != null) {
      check(m.at("streaming"), m.path("streaming"), io.kiln.pools.SpecRules.streamingFits(engine, uri, true));
    }
  }

  /** A name among the field's choices; null if absent or wrong (reported, with the closest choice). */
  private String choice(MappingReader s, ModelField f) {
    String text = s.text(f.key(), null);
    if (text == null) {
      return null;
    }
    List<String> choices = f.choices().get();
    if (!choices.contains(text)) {
      problems.at(s.at(f.key()), s.path(f.key()), "unknown " + f.key() + " '" + text + "'" + hint(text, choices));
      return null;
    }
    return text;
  }

  /** A nested section, read by the reader its field names; null if wrong (reported). */
  private Object section(MappingReader m, ModelField f, String engine) {
    if (f == ModelFields.PYTHON) {
      return new PythonReader(reading).read(m, engine);
    }
    throw new IllegalStateException("no YAML reader for section " + f.yaml() + " (add one beside PythonReader)");
  }

  /** Whether {@code engine} gives models that declare no inputs its own signature (a decoder's text tensors). */
  private static boolean defaultSignature(String engine, String uri) {
    return io.kiln.pools.spi.Engines.installed().get(engine)
        .defaultSignature(io.kiln.pools.spi.SpecFields.streaming(uri)).isPresent();
  }

  /** Single values (text, number or boolean) by name, as text; their engine checks them when the spec is built. */
  private Map<String, String> map(MappingReader o) {
    Map<String, String> map = new java.util.TreeMap<>();
    if (!o.present()) {
      return map;
    }
    for (org.yaml.snakeyaml.nodes.NodeTuple e : o.entries()) {
      String key = ((org.yaml.snakeyaml.nodes.ScalarNode) e.getKeyNode()).getValue();
      if (e.getValueNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode v) {
        map.put(key, v.getValue());
      } else {
        problems.at(e.getValueNode(), o.path(key), "must be a single value (text, number or boolean), got "
            + Reading.describe(e.getValueNode()));
      }
    }
    return map;
  }

  /** The engine, spelled exactly as one of {@link ModelSpec#engines()}; null if missing or unknown (reported). */
  private String engine(MappingReader m) {
    if (!m.has("engine")) {
      problems.at(m.node(), m.path("engine"), "missing required field 'engine' (one of "
          + String.join(", ", ModelSpec.engines()) + "; it may be left out when the model folder shows it: "
          + EngineDetection.describe() + ")");
      return null;
    }
    String text = m.requiredText("engine");
    if (text == null) {
      return null;
    }
    if (!ModelSpec.engines().contains(text)) {
      problems.at(m.at("engine"), m.path("engine"), "unknown engine '" + text + "'"
          + hint(text, ModelSpec.engines()));
      return null;
    }
    return text;
  }

  private String uri(MappingReader m, String engine) {
    String uri = m.requiredText("uri");
    if (uri == null) {
      return null;
    }
    Node at = m.at("uri");
    String path = m.path("uri");
    if (uri.isBlank()) {
      problems.at(at, path, "must not be empty");
      return null;
    }
    if (engine != null && !check(at, path, Rules.engineMatchesUri(engine, uri))) {
      return null;
    }
    if (uri.startsWith(Rules.BUILTIN_PREFIX)) {
      return check(at, path, Rules.builtinName(uri.substring(Rules.BUILTIN_PREFIX.length()))) ? uri : null;
    }
    if (SCHEME.matcher(uri).matches()) {
      // remote: downloaded by the node that loads it, so neither resolved against the YAML's folder nor checked here
      return check(at, path, ModelUris.problem(uri)) ? uri : null;
    }
    Path folder;
    try {
      folder = Path.of(uri);
    } catch (InvalidPathException e) {
      problems.at(at, path, "'" + uri + "' is not a valid path: " + e.getReason());
      return null;
    }
    if (!folder.isAbsolute() && options.baseDir() != null) {
      folder = options.baseDir().resolve(folder);
    }
    folder = folder.normalize();
    if (options.checkModelPaths() && engine != null && !Files.exists(folder)) {
      problems.at(at, path, "model folder " + folder + " does not exist"
          + (Path.of(uri).isAbsolute() || options.baseDir() == null ? ""
              : " (relative paths are resolved against the YAML file's folder " + options.baseDir() + ")"));
      return null;
    }
    return folder.toString();
  }

  private List<TensorSpec> tensors(MappingReader m, String kind) {
    String key = kind + "s";
    List<Node> items = m.list(key, true);
    if (items == null) {
      return null;
    }
    if (items.isEmpty()) {
      problems.at(m.at(key), m.path(key), "declare at least one " + kind);
      return null;
    }
    List<TensorSpec> tensors = new ArrayList<>();
    Map<String, Integer> seen = new HashMap<>();
    boolean ok = true;
    for (int i = 0; i < items.size(); i++) {
      MappingReader t = reading.mapping(items.get(i), m.path(key) + "[" + i + "]");
      String name = t.requiredText("name");
      if (name != null) {
        Integer first = seen.putIfAbsent(name, i);
        if (!check(t.at("name"), t.path("name"), Rules.notBlank(name))
            || !check(t.at("name"), t.path("name"), first == null ? null : Rules.uniqueTensor(kind, name, first))) {
          name = null;
        }
      }
      DataType datatype = datatype(t);
      long[] shape = shape(t);
      t.finish();
      if (name == null || datatype == null || shape == null || !t.present()) {
        ok = false;
      } else {
        tensors.add(new TensorSpec(name, datatype, shape));
      }
    }
    return ok ? tensors : null;
  }

  private DataType datatype(MappingReader t) {
    String text = t.requiredText("datatype");
    if (text == null) {
      return null;
    }
    Optional<DataType> type = DataType.parse(text);
    if (type.isEmpty()) {
      problems.at(t.at("datatype"), t.path("datatype"), "unknown datatype '" + text + "'" + hint(text, DATATYPES));
    }
    return type.orElse(null);
  }

  private long[] shape(MappingReader t) {
    List<Node> dims = t.list("shape", true);
    if (dims == null || !check(t.at("shape"), t.path("shape"), Rules.rank(dims.size()))) {
      return null;
    }
    long[] shape = new long[dims.size()];
    boolean ok = true;
    for (int i = 0; i < shape.length; i++) {
      String path = t.path("shape") + "[" + i + "]";
      Long d = reading.integer(dims.get(i), path, Long.MIN_VALUE, Long.MAX_VALUE);
      if (d == null || !check(dims.get(i), path, Rules.dimension(d))) {
        ok = false;
      } else {
        shape[i] = d;
      }
    }
    return ok ? shape : null;
  }

  /**
   * Whole numbers in the field's range; its default when absent, and an absent or wrong section reads as absent (a
   * wrong one is reported, so no spec is built anyway). Warm-up sizes must also fit the deployment's batches.
   */
  private List<Integer> integers(MappingReader s, ModelField f, Integer maxBatchSize) {
    List<Node> items = s.list(f.key(), false);
    if (items == null) {
      @SuppressWarnings("unchecked")
      List<Integer> dflt = (List<Integer>) f.defaultValue();
      return dflt;
    }
    List<Integer> values = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      String path = s.path(f.key()) + "[" + i + "]";
      Long n = reading.integer(items.get(i), path, f.min(), f.max());
      if (n != null && (maxBatchSize == null || f != ModelFields.WARMUP_BATCH_SIZES
          || check(items.get(i), path, Rules.warmupWithinBatch(n.intValue(), maxBatchSize)))) {
        values.add(n.intValue());
      }
    }
    return values;
  }

  private boolean check(Node at, String path, String message) {
    if (message != null) {
      problems.at(at, path, message);
      return false;
    }
    return true;
  }

  static String hint(String given, List<String> choices) {
    return Suggestions.closest(given, choices).map(s -> "; did you mean '" + s + "'?")
        .orElse("; expected one of: " + String.join(", ", choices));
  }
}
