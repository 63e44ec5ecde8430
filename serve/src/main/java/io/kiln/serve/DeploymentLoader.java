package io.kiln.serve;

import io.kiln.serve.yaml.Problems;
import io.kiln.serve.impl.SpecReader;
import io.kiln.serve.yaml.YamlDocuments;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Loads and validates a deployment YAML file. Every problem in the file is reported at once, each with
 * file, line, column and schema path, in a {@link DeploymentValidationException}; nothing is returned when
 * there is any, so nothing of a broken file can be applied. Relative model paths are resolved against the
 * file's folder and, for the PyTorch engine, must exist.
 *
 * <p>The input is bounded ({@link Options#maxBytes()}), nesting is limited and aliases to mappings or
 * lists are capped, so hostile files ("billion laughs") are refused cheaply. Nothing in the file is
 * turned into Java objects other than the spec records.
 *
 * <p>Instances are immutable and thread-safe. Both {@code load} methods block on the file system (reading
 * the file, checking model folders): call them off event loops. Parsing a file at the size limit takes
 * on the order of a second on a loaded core. The file name in problems is the path as given.
 */
public final class DeploymentLoader {

  /** Largest file accepted: 1 MiB, orders of magnitude above any real deployment file. */
  public static final long DEFAULT_MAX_BYTES = 1 << 20;

  /**
   * @param maxBytes largest input accepted, in UTF-8 bytes
   * @param checkModelPaths whether PyTorch model folders must exist (off where files live elsewhere)
   */
  public record Options(long maxBytes, boolean checkModelPaths) {

    public static final Options DEFAULT = new Options(DEFAULT_MAX_BYTES, true);

    public Options {
      if (maxBytes < 1 || maxBytes > Integer.MAX_VALUE - 1) {
        throw new IllegalArgumentException("maxBytes must be in [1, 2^31 - 2], got " + maxBytes);
      }
    }

    public Options withCheckModelPaths(boolean check) {
      return new Options(maxBytes, check);
    }
  }

  private final Options options;

  public DeploymentLoader() {
    this(Options.DEFAULT);
  }

  public DeploymentLoader(Options options) {
    this.options = options;
  }

  /**
   * Reads, parses and validates {@code file}.
   *
   * @throws DeploymentValidationException listing every problem, including an unreadable or too large file
   */
  public DeploymentFile load(Path file) {
    Problems problems = new Problems(file.toString());
    String text = null;
    try (InputStream in = Files.newInputStream(file)) {
      byte[] bytes = in.readNBytes((int) options.maxBytes() + 1);
      if (bytes.length > options.maxBytes()) {
        problems.at(1, 1, "", tooLarge(Files.size(file)));
      } else {
        text = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes)).toString();
      }
    } catch (CharacterCodingException e) {
      problems.at(1, 1, "", "the file is not valid UTF-8");
    } catch (IOException e) {
      problems.at(1, 1, "", "cannot read the file: " + describe(e));
    }
    problems.throwIfAny();
    return load(text, file);
  }

  /**
   * Parses and validates YAML text as if read from {@code sourceName}: problems name it, and relative
   * model paths are resolved against its folder.
   *
   * @throws DeploymentValidationException listing every problem
   */
  public DeploymentFile load(String yamlText, Path sourceName) {
    return load(yamlText, sourceName, name -> Optional.empty());
  }

  /**
   * As {@link #load(String, Path)}, and a deployment that changes what the running pools of its (same) version were
   * created with is a problem at its {@code version} (bump the version to roll it out; see
   * {@link ServeController#apply(String, Path, boolean)}).
   *
   * @param deployed the deployment of a name as it runs now, or empty
   */
  public DeploymentFile load(String yamlText, Path sourceName, Function<String, Optional<DeploymentSpec>> deployed) {
    Problems problems = new Problems(sourceName.toString());
    long bytes = utf8Length(yamlText);
    if (bytes > options.maxBytes()) {
      problems.at(1, 1, "", tooLarge(bytes));
      problems.throwIfAny();
    }
    String text = yamlText.startsWith("\uFEFF") ? yamlText.substring(1) : yamlText;
    Path baseDir = sourceName.toAbsolutePath().getParent();
    List<DeploymentSpec> specs = List.of();
    try {
      Node root = YamlDocuments.compose(text, (int) options.maxBytes() + 1, problems);
      specs = new SpecReader(problems, new SpecReader.Options(baseDir, options.checkModelPaths(), deployed))
          .readFile(root);
    } catch (Problems.Abort stop) {
      // Reading stopped early; the problems say why.
    }
    problems.throwIfAny();
    return new DeploymentFile(sourceName, specs);
  }

  /** The top-level section beside {@code deployments:} that the pipelines module reads (ignored here). */
  public static final String PIPELINES = SpecReader.PIPELINES;

  /**
   * Reads the deployments of a document already composed with {@link YamlDocuments#compose}, for files that
   * hold other sections too: every problem goes to {@code problems}, none is thrown here.
   *
   * @param baseDir folder that relative model paths resolve against, or null to keep them as written
   * @return the deployments, or what could be read of them when there are problems
   * @throws Problems.Abort when reading had to stop early (the problems say why)
   */
  public List<DeploymentSpec> readDeployments(Node root, Problems problems, Path baseDir) {
    return readDeployments(root, problems, baseDir, name -> Optional.empty());
  }

  /**
   * As {@link #readDeployments(Node, Problems, Path)}, comparing with what runs as
   * {@link #load(String, Path, Function)} does.
   */
  public List<DeploymentSpec> readDeployments(Node root, Problems problems, Path baseDir,
                                              Function<String, Optional<DeploymentSpec>> deployed) {
    return new SpecReader(problems, new SpecReader.Options(baseDir, options.checkModelPaths(), deployed))
        .readFile(root);
  }

  /** The top-level section of model graphs beside {@code deployments:} ({@link #readGraphs}; ignored by {@link #load}). */
  public static final String GRAPHS = SpecReader.GRAPHS;

  /**
   * What is already applied in the cluster, that a file's graphs may name or must not collide with.
   *
   * @param deployments names of the deployments already desired: graph steps may call them
   * @param specs a deployed deployment's spec by name, for its signature (empty: known by name only)
   * @param graphs names of the graphs already applied: no deployment of the file may take one
   */
  public record Known(Set<String> deployments, Function<String, Optional<DeploymentSpec>> specs, Set<String> graphs) {

    public static final Known NONE = new Known(Set.of(), name -> Optional.empty(), Set.of());

    public Known {
      deployments = Set.copyOf(deployments);
      java.util.Objects.requireNonNull(specs, "specs");
      graphs = Set.copyOf(graphs);
    }
  }

  /**
   * Reads the {@code graphs:} section of a document already composed with {@link YamlDocuments#compose} (see
   * {@link GraphSpec}), every problem with its line and column into {@code problems}, none thrown here: a step
   * naming a deployment neither in {@code deployments} (the file's, as {@link #readDeployments} read them; a declared
   * one with problems of its own still counts as known) nor in {@code known}, an input mapped from an output no
   * earlier step has, a datatype or shape mismatch between a producer and its reader where both are declared, and
   * the rest ({@link io.kiln.serve.impl.GraphReader}).
   *
   * @return the graphs (empty without a section), or what could be read of them when there are problems
   */
  public List<GraphSpec> readGraphs(Node root, Problems problems, List<DeploymentSpec> deployments, Known known) {
    if (!(root instanceof org.yaml.snakeyaml.nodes.MappingNode top)) {
      return List.of();
    }
    Node section = null;
    Set<String> names = new java.util.HashSet<>(known.deployments());
    for (var t : top.getValue()) {
      if (t.getKeyNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode k) {
        if (k.getValue().equals(GRAPHS) && section == null) {
          section = t.getValueNode();
        } else if (k.getValue().equals("deployments")) {
          names.addAll(declaredNames(t.getValueNode()));
        }
      }
    }
    java.util.Map<String, DeploymentSpec> inFile = new java.util.HashMap<>();
    deployments.forEach(d -> inFile.put(d.name(), d));
    var reader = new io.kiln.serve.impl.GraphReader(new io.kiln.serve.yaml.Reading(problems), names,
        name -> inFile.containsKey(name) ? Optional.of(inFile.get(name)) : known.specs().apply(name));
    List<GraphSpec> graphs = section == null || io.kiln.serve.yaml.Reading.isTag(section,
        org.yaml.snakeyaml.nodes.Tag.NULL) ? List.of() : reader.read(section, GRAPHS);
    Set<String> fileGraphs = new java.util.HashSet<>();
    graphs.forEach(g -> fileGraphs.add(g.name()));
    reader.checkDeploymentNames(root, known.graphs(), fileGraphs);
    return graphs;
  }

  /** Names under {@code deployments:}, even of deployments with problems (those are reported on their own). */
  private static Set<String> declaredNames(Node list) {
    Set<String> names = new java.util.HashSet<>();
    if (list instanceof org.yaml.snakeyaml.nodes.SequenceNode seq) {
      for (Node d : seq.getValue()) {
        if (d instanceof org.yaml.snakeyaml.nodes.MappingNode dm) {
          for (var f : dm.getValue()) {
            if (f.getKeyNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode fk && fk.getValue().equals("name")
                && f.getValueNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode fv) {
              names.add(fv.getValue());
            }
          }
        }
      }
    }
    return names;
  }

  private String tooLarge(long bytes) {
    return "the file is " + bytes + " bytes; the limit is " + options.maxBytes() + " bytes";
  }

  private static String describe(IOException e) {
    String type = e.getClass().getSimpleName().replace("Exception", "");
    return e.getMessage() == null ? type : type + " (" + e.getMessage() + ")";
  }

  private static long utf8Length(String s) {
    long n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }
}
