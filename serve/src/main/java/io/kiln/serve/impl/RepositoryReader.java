package io.kiln.serve.impl;

import io.kiln.pools.ModelRepository;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.SpecRules;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads a deployment's {@code repository} section (a multiplexed deployment's models) into model-pools'
 * {@link ModelRepository}:
 * <pre>
 * repository:
 *   path: models/zoo              # a folder of model folders: each subfolder is one model, named after it
 *   models:                       # and/or models one by one: a model section plus its name
 *     - {name: extra, uri: models/mlp-onnx}
 *   defaults: {inputs: [...], outputs: [...]}   # model fields every model shares; a model's own win
 *   max_models_per_worker: 4
 *   max_concurrent_loads: 2
 *   max_memory_mb: 512            # optional: the memory one worker's models may hold together (MiB, decimals allowed)
 * </pre>
 * A memory cap needs every model's engine to report what a model holds ({@link SpecRules#reportsMemory}): a model whose
 * engine cannot is a problem reported at {@code max_memory_mb}, never a cap silently ignored.
 * Each model is read by {@link ModelReader} as the {@code model} section is (engine detected from its folder when not
 * given), so every problem is reported with the line and column of the field it comes from. Not thread-safe.
 */
final class RepositoryReader {

  static final String MAX_MEMORY = "max_memory_mb";
  private static final long MIB = 1024 * 1024;

  private final Reading reading;
  private final Problems problems;
  private final SpecReader.Options options;

  RepositoryReader(Reading reading, SpecReader.Options options) {
    this.reading = reading;
    this.problems = reading.problems();
    this.options = options;
  }

  /** The repository, or null if anything in it is wrong (reported). */
  ModelRepository read(MappingReader r, Integer maxBatchSize) {
    int before = problems.count();
    Integer k = r.integer("max_models_per_worker", ModelRepository.DEFAULT_MAX_MODELS_PER_WORKER, 1,
        ModelRepository.MAX_MODELS_PER_WORKER);
    Integer loads = r.integer("max_concurrent_loads", ModelRepository.DEFAULT_MAX_CONCURRENT_LOADS, 1,
        ModelRepository.MAX_CONCURRENT_LOADS);
    Long capBytes = memoryCap(r);
    Node defaultsNode = r.value("defaults");
    List<NodeTuple> defaults = List.of();
    if (defaultsNode != null) {
      MappingReader d = reading.mapping(defaultsNode, r.path("defaults"));
      if (d.valid()) {
        defaults = d.entries();
      }
    }
    List<ModelRepository.Entry> models = new ArrayList<>();
    Map<String, String> seen = new HashMap<>();
    String folder = r.text("path", null);
    if (folder != null) {
      for (Path sub : subfolders(folder, r.at("path"), r.path("path"))) {
        String name = sub.getFileName().toString();
        Node uri = new ScalarNode(Tag.STR, sub.toString(), r.at("path").getStartMark(), r.at("path").getEndMark(),
            DumperOptions.ScalarStyle.PLAIN);
        List<NodeTuple> own = List.of(new NodeTuple(
            new ScalarNode(Tag.STR, "uri", r.keyAt("path").getStartMark(), r.keyAt("path").getEndMark(),
                DumperOptions.ScalarStyle.PLAIN), uri));
        add(models, seen, name, r.at("path"), r.path("path") + "/" + name, merged(own, defaults, r.at("path")),
            maxBatchSize);
      }
    }
    List<Node> items = r.list("models", false);
    if (items != null) {
      for (int i = 0; i < items.size(); i++) {
        String path = r.path("models") + "[" + i + "]";
        MappingReader item = reading.mapping(items.get(i), path);
        if (!item.valid()) {
          continue;
        }
        String name = item.requiredText("name");
        List<NodeTuple> own = new ArrayList<>();
        for (NodeTuple t : item.entries()) {
          if (!(t.getKeyNode() instanceof ScalarNode key && key.getValue().equals("name"))) {
            own.add(t);
          }
        }
        if (name != null) {
          add(models, seen, name, item.at("name"), path, merged(own, defaults, items.get(i)), maxBatchSize);
        }
      }
    }
    r.finish();
    if (folder == null && items == null && r.present()) {
      problems.at(r.node(), r.path(), "a repository needs 'path' (a folder of model folders) or 'models' (a list)");
    } else if (models.isEmpty() && problems.count() == before && r.present()) {
      problems.at(r.node(), r.path(), "the repository holds no model");
    }
    if (models.size() > ModelRepository.MAX_MODELS) {
      problems.at(r.node(), r.path(), "a repository holds at most " + ModelRepository.MAX_MODELS + " models, this one "
          + models.size());
    }
    if (capBytes != null && capBytes > 0) {
      for (ModelRepository.Entry e : models) {
        String why = SpecRules.reportsMemory(e.model().engine());
        if (why != null) {
          problems.at(r.at(MAX_MEMORY), r.path(MAX_MEMORY), "model '" + e.name() + "': " + why);
        }
      }
    }
    if (problems.count() > before || k == null || loads == null || capBytes == null) {
      return null;
    }
    return new ModelRepository(models, k, loads, capBytes);
  }

  /** {@value #MAX_MEMORY} in bytes (MiB in the file, decimals allowed); 0 when absent, null when wrong (reported). */
  private Long memoryCap(MappingReader r) {
    if (!r.has(MAX_MEMORY)) {
      return ModelRepository.NO_MEMORY_CAP;
    }
    BigDecimal mb = r.decimal(MAX_MEMORY, null, 0, ModelRepository.MAX_MODEL_BYTES / MIB);
    if (mb == null) {
      return null;
    }
    long bytes = mb.multiply(BigDecimal.valueOf(MIB)).setScale(0, RoundingMode.HALF_UP).longValueExact();
    if (bytes < 1) {
      problems.at(r.at(MAX_MEMORY), r.path(MAX_MEMORY), "must be more than 0 MiB, got " + mb.toPlainString()
          + " (leave it out for no memory cap)");
      return null;
    }
    return bytes;
  }

  private void add(List<ModelRepository.Entry> models, Map<String, String> seen, String name, Node at, String path,
                   MappingNode section, Integer maxBatchSize) {
    if (!ModelRepository.NAME.matcher(name).matches()) {
      problems.at(at, path, "model name '" + name + "' must match " + ModelRepository.NAME.pattern());
      return;
    }
    String first = seen.putIfAbsent(name, path);
    if (first != null) {
      problems.at(at, path, "duplicate model '" + name + "' (also " + first + ")");
      return;
    }
    ModelSpec spec = new ModelReader(reading, options).read(reading.mapping(section, path), maxBatchSize);
    if (spec != null && spec.streaming()) {
      problems.at(at, path, "model '" + name + "' streams: a streaming model cannot be multiplexed");
    } else if (spec != null) {
      models.add(new ModelRepository.Entry(name, spec));
    }
  }

  // The model's own fields, then the defaults it does not set; positions stay those of the file.
  private static MappingNode merged(List<NodeTuple> own, List<NodeTuple> defaults, Node at) {
    List<NodeTuple> tuples = new ArrayList<>(own);
    Set<String> keys = new HashSet<>();
    for (NodeTuple t : own) {
      if (t.getKeyNode() instanceof ScalarNode key) {
        keys.add(key.getValue());
      }
    }
    for (NodeTuple t : defaults) {
      if (!(t.getKeyNode() instanceof ScalarNode key) || !keys.contains(key.getValue())) {
        tuples.add(t);
      }
    }
    return new MappingNode(Tag.MAP, true, tuples, at.getStartMark(), at.getEndMark(), DumperOptions.FlowStyle.BLOCK);
  }

  private List<Path> subfolders(String text, Node at, String path) {
    Path dir;
    try {
      dir = Path.of(text);
    } catch (InvalidPathException e) {
      problems.at(at, path, "'" + text + "' is not a valid path: " + e.getReason());
      return List.of();
    }
    if (!dir.isAbsolute() && options.baseDir() != null) {
      dir = options.baseDir().resolve(dir);
    }
    dir = dir.normalize();
    if (!Files.isDirectory(dir)) {
      problems.at(at, path, "repository folder " + dir + " does not exist or is not a folder");
      return List.of();
    }
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        if (Files.isDirectory(p) && !p.getFileName().toString().startsWith(".")) {
          if (out.size() > ModelRepository.MAX_MODELS) {
            break;
          }
          out.add(p);
        }
      }
    } catch (IOException e) {
      problems.at(at, path, "cannot list repository folder " + dir + ": " + e.getMessage());
      return List.of();
    }
    out.sort(null);
    return out;
  }
}
