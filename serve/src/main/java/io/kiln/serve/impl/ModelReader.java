package io.kiln.serve.impl;

import io.kiln.pools.DataType;
import io.kiln.pools.TensorSpec;
import io.kiln.serve.ModelConfig;
import io.kiln.serve.ModelEngine;
import io.kiln.serve.ModelFormat;
import io.kiln.serve.ThreadsSpec;
import io.kiln.serve.WarmupSpec;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads a deployment's {@code model} section: the URI (resolved against the YAML file's folder and, when
 * asked, checked to exist), engine, format, tensors, warm-up and threads. Not thread-safe.
 */
final class ModelReader {

  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://.*");
  private static final List<String> ENGINES = Arrays.stream(ModelEngine.values()).map(ModelEngine::spelling).toList();
  private static final List<String> FORMATS = Arrays.stream(ModelFormat.values()).map(ModelFormat::spelling).toList();
  private static final List<String> DATATYPES = Arrays.stream(DataType.values()).map(DataType::name).toList();

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
  ModelConfig read(MappingReader m, Integer maxBatchSize) {
    int before = problems.count();
    ModelEngine engine = engine(m);
    String uri = uri(m, engine);
    Optional<ModelFormat> format = format(m, engine);
    Optional<String> architecture = Optional.empty();
    String arch = m.text("architecture", null);
    if (arch != null) {
      architecture = Optional.of(arch);
      check(m.at("architecture"), m.path("architecture"), Rules.notBlank(arch));
    }
    if (format != null && !arch(m, format, architecture)) {
      format = null;
    }
    List<TensorSpec> inputs = tensors(m, "input");
    List<TensorSpec> outputs = tensors(m, "output");
    WarmupSpec warmup = warmup(m.section("warmup"), maxBatchSize);
    Optional<ThreadsSpec> threads = threads(m.section("threads"));
    m.finish();
    if (problems.count() > before || !m.present()) {
      return null;
    }
    return new ModelConfig(uri, engine, format, architecture, inputs, outputs, warmup, threads);
  }

  private ModelEngine engine(MappingReader m) {
    String text = m.requiredText("engine");
    if (text == null) {
      return null;
    }
    Optional<ModelEngine> engine = ModelEngine.parse(text);
    if (engine.isEmpty()) {
      problems.at(m.at("engine"), m.path("engine"), "unknown engine '" + text + "'"
          + hint(text, ENGINES));
    }
    return engine.orElse(null);
  }

  private String uri(MappingReader m, ModelEngine engine) {
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
      problems.at(at, path, "unsupported uri '" + uri + "': use a model folder path or builtin:<name>");
      return null;
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
    if (options.checkModelPaths() && engine == ModelEngine.PYTORCH && !Files.exists(folder)) {
      problems.at(at, path, "model folder " + folder + " does not exist"
          + (Path.of(uri).isAbsolute() || options.baseDir() == null ? ""
              : " (relative paths are resolved against the YAML file's folder " + options.baseDir() + ")"));
      return null;
    }
    return folder.toString();
  }

  /** The declared format: empty if not declared, null if wrong. */
  private Optional<ModelFormat> format(MappingReader m, ModelEngine engine) {
    String text = m.text("format", null);
    if (text == null) {
      return m.has("format") ? null : Optional.empty();
    }
    Optional<ModelFormat> format = ModelFormat.parse(text);
    if (format.isEmpty()) {
      problems.at(m.at("format"), m.path("format"), "unknown format '" + text + "'" + hint(text, FORMATS));
      return null;
    }
    if (engine != null && !check(m.at("format"), m.path("format"), Rules.formatFits(engine, format))) {
      return null;
    }
    return format;
  }

  private boolean arch(MappingReader m, Optional<ModelFormat> format, Optional<String> architecture) {
    String message = Rules.architectureFits(format, architecture);
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
  private WarmupSpec warmup(MappingReader w, Integer maxBatchSize) {
    List<Node> items = w.list("batch_sizes", false);
    w.finish();
    if (items == null) {
      return WarmupSpec.DEFAULT;
    }
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      String path = w.path("batch_sizes") + "[" + i + "]";
      Long n = reading.integer(items.get(i), path, 1, Integer.MAX_VALUE);
      if (n != null && (maxBatchSize == null
          || check(items.get(i), path, Rules.warmupWithinBatch(n.intValue(), maxBatchSize)))) {
        sizes.add(n.intValue());
      }
    }
    return new WarmupSpec(sizes);
  }

  private Optional<ThreadsSpec> threads(MappingReader t) {
    Integer intra = t.integer("intra_op", ThreadsSpec.DEFAULT_INTRA_OP, 1, ThreadsSpec.MAX_THREADS);
    Integer inter = t.integer("inter_op", ThreadsSpec.DEFAULT_INTER_OP, 1, ThreadsSpec.MAX_THREADS);
    t.finish();
    if (!t.present() || intra == null || inter == null) {
      return Optional.empty();
    }
    return Optional.of(new ThreadsSpec(intra, inter));
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
