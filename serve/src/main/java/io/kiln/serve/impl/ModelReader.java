package io.kiln.serve.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.ModelUris;
import io.kiln.pools.TensorSpec;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads a deployment's {@code model} section: the URI (resolved against the YAML file's folder and, when
 * asked, checked to exist), engine, format, tensors, warm-up and threads, into model-pools'
 * {@link ModelSpec}. Not thread-safe.
 */
final class ModelReader {

  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://.*");
  private static final List<String> DATATYPES = java.util.Arrays.stream(DataType.values()).map(DataType::name).toList();
  /** Threads of each PyTorch pool when the {@code threads} section is there but leaves one out. */
  private static final int DEFAULT_THREADS = 1;
  private static final int NO_THREADS = 0;

  private final Reading reading;
  private final Problems problems;
  private final SpecReader.Options options;

  ModelReader(Reading reading, SpecReader.Options options) {
    this.reading = reading;
    this.problems = reading.problems();
    this.options = options;
  }

  /**
   * The model, or null if anything in it is wrong (reported).
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
    String sha256 = sha256(m, uri);
    Optional<String> format = format(m, engine);
    Optional<String> architecture = Optional.empty();
    String arch = m.text("architecture", null);
    if (arch != null) {
      architecture = Optional.of(arch);
      check(m.at("architecture"), m.path("architecture"), Rules.notBlank(arch));
    }
    if (format != null && !arch(m, format, architecture)) {
      format = null;
    }
    boolean engineSignature = engine != null && uri != null && defaultSignature(engine, uri);
    List<TensorSpec> inputs = engineSignature && !m.has("inputs") ? List.of() : tensors(m, "input");
    List<TensorSpec> outputs = engineSignature && !m.has("outputs") ? List.of() : tensors(m, "output");
    Map<String, String> engineOptions = options(m.section("options"));
    List<Integer> warmup = warmup(m.section("warmup"), maxBatchSize);
    int[] threads = threads(m.section("threads"));
    Boolean allowCpuFallback = m.bool("allow_cpu_fallback", false);
    Boolean streaming = m.bool("streaming", false);
    if (Boolean.TRUE.equals(streaming) && engine != null && uri != null) {
      check(m.at("streaming"), m.path("streaming"), io.kiln.pools.SpecRules.streamingFits(engine, uri, true));
    }
    PythonReader pythonReader = new PythonReader(reading);
    io.kiln.pools.PythonOptions python = pythonReader.read(m, engine);
    if (python != null && uri != null && options.checkModelPaths() && !ModelUris.isRemote(uri)) {
      pythonReader.checkModelFile(Path.of(uri), python.className(), m.at("uri"), m.path("uri"));
    }
    m.finish();
    if (problems.count() > before || !m.present()) {
      return null;
    }
    try {
      return ModelSpec.builder().uri(uri).engine(engine).format(format.orElse(ModelSpec.FORMAT_AUTO))
          .architecture(architecture.orElse("")).inputs(inputs).outputs(outputs).warmupBatchSizes(warmup)
          .intraOpThreads(threads[0]).interOpThreads(threads[1]).python(python)
          .allowCpuFallback(Boolean.TRUE.equals(allowCpuFallback))
          .streaming(Boolean.TRUE.equals(streaming)).sha256(sha256).options(engineOptions).build();
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

  /** Whether {@code engine} gives models that declare no inputs its own signature (a decoder's text tensors). */
  private static boolean defaultSignature(String engine, String uri) {
    return io.kiln.pools.spi.Engines.installed().get(engine)
        .defaultSignature(io.kiln.pools.spi.SpecFields.streaming(uri)).isPresent();
  }

  /** The engine's own settings, each a scalar, as text; their engine checks them when the spec is built. */
  private Map<String, String> options(MappingReader o) {
    Map<String, String> options = new java.util.TreeMap<>();
    if (!o.present()) {
      return options;
    }
    for (org.yaml.snakeyaml.nodes.NodeTuple e : o.entries()) {
      String key = ((org.yaml.snakeyaml.nodes.ScalarNode) e.getKeyNode()).getValue();
      if (e.getValueNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode v) {
        options.put(key, v.getValue());
      } else {
        problems.at(e.getValueNode(), o.path(key), "must be a single value (text, number or boolean), got "
            + Reading.describe(e.getValueNode()));
      }
    }
    return options;
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

  /** The declared sha256 ("" if none), checked against the uri; null if wrong (reported). */
  private String sha256(MappingReader m, String uri) {
    String text = m.text("sha256", null);
    if (text != null) {
      text = text.trim();
    }
    if (uri == null) {
      return text;
    }
    String problem = ModelUris.sha256Problem(uri, text);
    if (problem != null) {
      problems.at(m.has("sha256") ? m.at("sha256") : m.at("uri"), m.path("sha256"), problem);
      return null;
    }
    return text == null ? "" : text;
  }

  /** The declared format: empty if not declared, null if wrong. */
  private Optional<String> format(MappingReader m, String engine) {
    String text = m.text("format", null);
    if (text == null) {
      return m.has("format") ? null : Optional.empty();
    }
    if (!ModelSpec.FORMATS.contains(text)) {
      problems.at(m.at("format"), m.path("format"), "unknown format '" + text + "'"
          + hint(text, ModelSpec.FORMATS));
      return null;
    }
    if (engine != null && !check(m.at("format"), m.path("format"), Rules.formatFits(engine, text))) {
      return null;
    }
    return Optional.of(text);
  }

  private boolean arch(MappingReader m, Optional<String> format, Optional<String> architecture) {
    String message = Rules.architectureFits(format.orElse(ModelSpec.FORMAT_AUTO), architecture.orElse(""));
    Node at = architecture.isPresent() ? m.keyAt("architecture") : m.at("format");
    return check(at, m.path("architecture"), message);
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

  /** Absent or wrong sections read as defaults: a wrong one is reported, so no spec is built anyway. */
  private List<Integer> warmup(MappingReader w, Integer maxBatchSize) {
    List<Node> items = w.list("batch_sizes", false);
    w.finish();
    if (items == null) {
      return ModelSpec.DEFAULT_WARMUP_BATCH_SIZES;
    }
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      String path = w.path("batch_sizes") + "[" + i + "]";
      Long n = reading.integer(items.get(i), path, 1, ModelSpec.MAX_WARMUP_BATCH_SIZE);
      if (n != null && (maxBatchSize == null
          || check(items.get(i), path, Rules.warmupWithinBatch(n.intValue(), maxBatchSize)))) {
        sizes.add(n.intValue());
      }
    }
    return sizes;
  }

  /** {intra, inter}; {0, 0} (the engine's defaults) without a section, or with a wrong one (reported). */
  private int[] threads(MappingReader t) {
    Integer intra = t.integer("intra_op", DEFAULT_THREADS, 1, ModelSpec.MAX_THREADS);
    Integer inter = t.integer("inter_op", DEFAULT_THREADS, 1, ModelSpec.MAX_THREADS);
    t.finish();
    if (!t.present() || intra == null || inter == null) {
      return new int[] {NO_THREADS, NO_THREADS};
    }
    return new int[] {intra, inter};
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
