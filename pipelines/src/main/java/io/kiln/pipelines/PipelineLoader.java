package io.kiln.pipelines;

import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.GraphSpec;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.YamlDocuments;
import io.kiln.pipelines.impl.PipelineReader;
import io.kiln.pipelines.impl.StepClasses;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Loads a deployment file that may declare {@code graphs:} and {@code pipelines:} beside its {@code deployments:},
 * validating all in one pass: every problem of any, with file, line, column and schema path, in one
 * {@link DeploymentValidationException}; nothing is returned when there is any. Pipeline problems include
 * an unknown step kind or field (with a suggestion), a {@code same_node_as} naming an unknown, later or the
 * same step, an infer step on a deployment (or graph) neither in the file nor already applied, an infer step not
 * pinned to the node holding its input, an unknown user step class, and malformed {@code ${input.NAME}}
 * placeholders; graph problems are {@link DeploymentLoader#readGraphs}'.
 *
 * <p>Immutable and thread-safe; {@link #load} blocks (model folders, class loading): call it off event loops.
 */
public final class PipelineLoader {

  /**
   * @param deployments how the deployments are read (size limit, model path checks)
   * @param checkClasses whether user step classes must be loadable here
   * @param classLoader where user step classes are looked up
   */
  public record Options(DeploymentLoader.Options deployments, boolean checkClasses, ClassLoader classLoader) {

    public static final Options DEFAULT = new Options(DeploymentLoader.Options.DEFAULT, true,
        PipelineLoader.class.getClassLoader());

    public Options withDeployments(DeploymentLoader.Options d) {
      return new Options(d, checkClasses, classLoader);
    }

    public Options withCheckClasses(boolean check) {
      return new Options(deployments, check, classLoader);
    }
  }

  private final Options options;

  public PipelineLoader() {
    this(Options.DEFAULT);
  }

  public PipelineLoader(Options options) {
    this.options = options;
  }

  /** Whether a YAML document declares a top-level {@code pipelines:} section (a cheap syntactic check). */
  public static boolean declaresPipelines(String yamlText) {
    for (String line : yamlText.split("\n", -1)) {
      if (line.startsWith(DeploymentLoader.PIPELINES + ":") || line.startsWith("\"" + DeploymentLoader.PIPELINES + "\":")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Reads, parses and validates {@code file} (relative model paths resolve against its folder).
   *
   * @param knownDeployments deployments already deployed, which infer steps may also name
   * @throws DeploymentValidationException listing every problem, including an unreadable or too large file
   */
  public PipelineFile load(Path file, Set<String> knownDeployments) {
    long max = options.deployments().maxBytes();
    String text;
    try (java.io.InputStream in = java.nio.file.Files.newInputStream(file)) {
      byte[] bytes = in.readNBytes((int) max + 1);
      text = new String(bytes, StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      throw new DeploymentValidationException(List.of(new io.kiln.serve.Problem(file.toString(), 1, 1, "",
          "cannot read the file: " + e.getMessage())));
    }
    return load(text, file, knownDeployments);
  }

  /**
   * Parses and validates YAML text as if read from {@code sourceName}.
   *
   * @param knownDeployments deployments already deployed, which infer steps may also name
   * @throws DeploymentValidationException listing every problem
   */
  public PipelineFile load(String yamlText, Path sourceName, Set<String> knownDeployments) {
    return load(yamlText, sourceName, knownDeployments, name -> java.util.Optional.empty());
  }

  /**
   * As {@link #load(String, Path, Set)}; a deployment re-applying its running version with settings its pools keep is
   * a problem at its {@code version} (see {@link DeploymentLoader#load(String, Path, java.util.function.Function)}).
   *
   * @param deployed the deployment of a name as it runs now, or empty
   */
  public PipelineFile load(String yamlText, Path sourceName, Set<String> knownDeployments,
                           java.util.function.Function<String, java.util.Optional<DeploymentSpec>> deployed) {
    return load(yamlText, sourceName, new DeploymentLoader.Known(knownDeployments, deployed, Set.of()));
  }

  /**
   * As {@link #load(String, Path, Set, java.util.function.Function)}, with the file's {@code graphs:} section read
   * beside its deployments ({@link DeploymentLoader#readGraphs}): graph steps and infer steps ({@code graph: NAME})
   * may name what is already applied ({@code known}), and no deployment of the file may take a stored graph's name.
   */
  public PipelineFile load(String yamlText, Path sourceName, DeploymentLoader.Known known) {
    Set<String> knownDeployments = known.deployments();
    java.util.function.Function<String, java.util.Optional<DeploymentSpec>> deployed = known.specs();
    Problems problems = new Problems(sourceName.toString());
    long max = options.deployments().maxBytes();
    if (yamlText.getBytes(StandardCharsets.UTF_8).length > max) {
      problems.at(1, 1, "", "the file is larger than " + max + " bytes");
      problems.throwIfAny();
    }
    String text = yamlText.startsWith("\uFEFF") ? yamlText.substring(1) : yamlText;
    Path baseDir = sourceName.toAbsolutePath().getParent();
    List<DeploymentSpec> deployments = List.of();
    List<PipelineSpec> pipelines = List.of();
    List<GraphSpec> graphs = List.of();
    try {
      Node root = YamlDocuments.compose(text, (int) max + 1, problems);
      DeploymentLoader deploymentLoader = new DeploymentLoader(options.deployments());
      deployments = deploymentLoader.readDeployments(root, problems, baseDir, deployed);
      graphs = deploymentLoader.readGraphs(root, problems, deployments, known);
      if (root instanceof MappingNode) {
        Reading reading = new Reading(problems);
        Node section = topLevel(root, DeploymentLoader.PIPELINES);
        if (section != null && !(section instanceof ScalarNode s && s.getTag().equals(Tag.NULL))) {
          Set<String> names = new HashSet<>(knownDeployments);
          names.addAll(declaredNames(root, "deployments"));
          StepClasses classes = options.checkClasses() ? StepClasses.on(options.classLoader()) : StepClasses.UNCHECKED;
          Set<String> graphNames = new HashSet<>(known.graphs());
          graphNames.addAll(declaredNames(root, DeploymentLoader.GRAPHS));
          java.util.Map<String, io.kiln.pools.ModelSignature> signatures = new java.util.HashMap<>();
          for (String n : knownDeployments) {
            deployed.apply(n).ifPresent(d -> signatures.put(n, d.model().signature()));
          }
          deployments.forEach(d -> signatures.put(d.name(), d.model().signature()));
          java.util.Map<String, Set<String>> graphOutputs = new java.util.HashMap<>();
          graphs.forEach(g -> graphOutputs.put(g.name(), g.outputs().stream().map(o -> o.tensor().name())
              .collect(java.util.stream.Collectors.toSet())));
          pipelines = new PipelineReader(reading, names, graphNames, signatures, graphOutputs, classes)
              .source(text).read(section, DeploymentLoader.PIPELINES);
        }
      }
    } catch (Problems.Abort stop) {
      // Reading stopped early; the problems say why.
    }
    problems.throwIfAny();
    return new PipelineFile(sourceName, deployments, pipelines, graphs);
  }

  /**
   * Checks specs built in code, not read from YAML, for what their records cannot check alone: distinct
   * deployment {@code name@version} and pipeline names, infer steps on a deployment among {@code deployments}
   * or {@code knownDeployments}, and (when the options check classes) loadable user step classes. Specs have
   * no positions: every problem is at line 1, column 1 of {@code source}, with its schema path.
   *
   * @throws DeploymentValidationException listing every problem
   */
  public void check(Path source, List<DeploymentSpec> deployments, List<PipelineSpec> pipelines,
                    Set<String> knownDeployments) {
    String file = source.toString();
    List<io.kiln.serve.Problem> problems = new java.util.ArrayList<>();
    Set<String> names = new HashSet<>(knownDeployments);
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < deployments.size(); i++) {
      DeploymentSpec d = deployments.get(i);
      names.add(d.name());
      if (!ids.add(d.name() + "@" + d.version())) {
        problems.add(new io.kiln.serve.Problem(file, 1, 1, "deployments[" + i + "]",
            "duplicate deployment " + d.name() + "@" + d.version()));
      }
    }
    StepClasses classes = options.checkClasses() ? StepClasses.on(options.classLoader()) : StepClasses.UNCHECKED;
    Set<String> pipelineNames = new HashSet<>();
    for (int i = 0; i < pipelines.size(); i++) {
      PipelineSpec p = pipelines.get(i);
      String path = DeploymentLoader.PIPELINES + "[" + i + "]";
      if (!pipelineNames.add(p.name())) {
        problems.add(new io.kiln.serve.Problem(file, 1, 1, path + ".name", "duplicate pipeline '" + p.name() + "'"));
      }
      for (int j = 0; j < p.steps().size(); j++) {
        StepAction action = p.steps().get(j).action();
        String at = path + ".steps[" + j + "]";
        if (action instanceof StepAction.Infer infer && !infer.graph() && !names.contains(infer.deployment())) {
          problems.add(new io.kiln.serve.Problem(file, 1, 1, at + ".infer.deployment",
              "unknown deployment '" + infer.deployment() + "'; known deployments: "
                  + String.join(", ", new java.util.TreeSet<>(names))));
        } else if (action instanceof StepAction.Generate generate && !names.contains(generate.deployment())) {
          problems.add(new io.kiln.serve.Problem(file, 1, 1, at + ".generate.deployment",
              "unknown deployment '" + generate.deployment() + "'; known deployments: "
                  + String.join(", ", new java.util.TreeSet<>(names))));
        } else if (action instanceof StepAction.Custom custom) {
          String problem = classes.problem(custom.className());
          if (problem != null) {
            problems.add(new io.kiln.serve.Problem(file, 1, 1, at + ".class", problem));
          }
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new DeploymentValidationException(problems);
    }
  }

  /** The first value of a top-level key (the deployment reader reports duplicates), or null. */
  private static Node topLevel(Node root, String key) {
    for (var t : ((MappingNode) root).getValue()) {
      if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals(key)) {
        return t.getValueNode();
      }
    }
    return null;
  }

  /** Names under a top-level list ({@code deployments:}, {@code graphs:}), even of items with problems (reported). */
  private static Set<String> declaredNames(Node root, String section) {
    Set<String> names = new HashSet<>();
    for (var t : ((MappingNode) root).getValue()) {
      if (t.getKeyNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode k && k.getValue().equals(section)
          && t.getValueNode() instanceof org.yaml.snakeyaml.nodes.SequenceNode seq) {
        for (Node d : seq.getValue()) {
          if (d instanceof MappingNode dm) {
            for (var f : dm.getValue()) {
              if (f.getKeyNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode fk && fk.getValue().equals("name")
                  && f.getValueNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode fv) {
                names.add(fv.getValue());
              }
            }
          }
        }
      }
    }
    return names;
  }
}
