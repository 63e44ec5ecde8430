package io.kiln.serve.impl;

import io.kiln.pools.ModelSignature;
import io.kiln.pools.TensorSpec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.GraphSpec;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * Reads the top-level {@code graphs:} section of a deployment file (see {@link GraphSpec} and docs/graphs.md),
 * reporting every problem with line and column as the deployment reader does and building specs only for graphs
 * without any: a graph name a deployment has, an unknown step model (with a suggestion), a repository or streaming
 * deployment as a step, an input of the model left unmapped or one it does not have, a source naming an unknown input,
 * an unknown, later or the same step, or an output its model does not declare, and a datatype or shape mismatch
 * between a producer and its reader when both are declared. Not thread-safe: one instance per document.
 */
public final class GraphReader {

  /** Graphs per file at most. */
  public static final int MAX_GRAPHS = 100;

  private final Reading reading;
  private final Problems problems;
  private final Set<String> deployments;
  private final Function<String, Optional<DeploymentSpec>> specs;
  private final Map<String, String> seen = new HashMap<>();
  private final GraphTensors tensors;

  /**
   * @param deployments every deployment a step may call: the file's (with problems or not) and those deployed
   * @param specs a deployment's spec where it is known (the file's valid ones, the deployed ones), for its signature
   */
  public GraphReader(Reading reading, Set<String> deployments, Function<String, Optional<DeploymentSpec>> specs) {
    this.reading = reading;
    this.problems = reading.problems();
    this.deployments = deployments;
    this.specs = specs;
    this.tensors = new GraphTensors(reading);
  }

  /** The graphs of {@code section} (the value of {@code graphs:}), complete only if nothing was reported. */
  public List<GraphSpec> read(Node section, String path) {
    List<GraphSpec> out = new ArrayList<>();
    List<Node> items = reading.list(section, path);
    if (items == null) {
      return out;
    }
    if (items.size() > MAX_GRAPHS) {
      problems.at(section, path, items.size() + " graphs; at most " + MAX_GRAPHS + " per file");
      return out;
    }
    for (int i = 0; i < items.size(); i++) {
      GraphSpec g = graph(items.get(i), path + "[" + i + "]");
      if (g != null) {
        out.add(g);
      }
    }
    return out;
  }

  /**
   * Reports each deployment of the file whose name is a graph's already applied and not declared in this file:
   * clients call both by name, so the two cannot share one.
   */
  public void checkDeploymentNames(Node root, Set<String> storedGraphs, Set<String> fileGraphs) {
    if (!(root instanceof MappingNode top) || storedGraphs.isEmpty()) {
      return;
    }
    for (NodeTuple t : top.getValue()) {
      if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals("deployments")
          && t.getValueNode() instanceof org.yaml.snakeyaml.nodes.SequenceNode seq) {
        for (int i = 0; i < seq.getValue().size(); i++) {
          if (seq.getValue().get(i) instanceof MappingNode d) {
            for (NodeTuple f : d.getValue()) {
              if (f.getKeyNode() instanceof ScalarNode fk && fk.getValue().equals("name")
                  && f.getValueNode() instanceof ScalarNode v && storedGraphs.contains(v.getValue())
                  && !fileGraphs.contains(v.getValue())) {
                problems.at(v, "deployments[" + i + "].name", "'" + v.getValue() + "' is the name of a graph already"
                    + " applied; a deployment and a graph are both called by name, so they need different ones");
              }
            }
          }
        }
      }
    }
  }

  private GraphSpec graph(Node node, String path) {
    int before = problems.count();
    MappingReader m = reading.mapping(node, path);
    if (!m.valid()) {
      return null;
    }
    String name = m.requiredText("name");
    if (name != null) {
      String problem = Rules.name(name);
      if (problem != null) {
        problems.at(m.at("name"), m.path("name"), problem);
      } else if (deployments.contains(name)) {
        problems.at(m.at("name"), m.path("name"), "'" + name + "' is a deployment's name; a graph is served as a"
            + " model of its own name, so it needs one no deployment has");
      } else {
        String first = seen.putIfAbsent(name, path);
        if (first != null) {
          problems.at(m.at("name"), m.path("name"), "duplicate graph '" + name + "' (also " + first + ")");
        }
      }
    }
    String version = m.text("version", GraphSpec.DEFAULT_VERSION);
    if (version != null && Rules.version(version) != null) {
      problems.at(m.at("version"), m.path("version"), Rules.version(version));
    }
    List<TensorSpec> inputs = tensors.list(m, "inputs", false);
    List<Node> stepNodes = m.list("steps", true);
    List<Node> outputNodes = m.list("outputs", true);
    m.finish();
    List<GraphSpec.Step> steps = new ArrayList<>();
    GraphSources sources = null;
    if (stepNodes != null) {
      if (stepNodes.isEmpty() || stepNodes.size() > GraphSpec.MAX_STEPS) {
        problems.at(m.at("steps"), m.path("steps"), stepNodes.isEmpty() ? "declare at least one step"
            : stepNodes.size() + " steps; at most " + GraphSpec.MAX_STEPS);
      } else {
        sources = new GraphSources(problems, inputs, stepNames(stepNodes));
        for (int i = 0; i < stepNodes.size(); i++) {
          GraphSpec.Step s = step(stepNodes.get(i), m.path("steps") + "[" + i + "]", i, sources);
          if (s != null) {
            steps.add(s);
          }
        }
      }
    }
    List<GraphSpec.Output> outputs = outputNodes == null || sources == null ? List.of()
        : outputs(m, outputNodes, sources, stepNodes.size());
    if (inputs != null && problems.count() == before) {
      unusedInputs(m, inputs, steps, outputs);
    }
    if (problems.count() > before) {
      return null;
    }
    try {
      return new GraphSpec(name, version, inputs, steps, outputs);
    } catch (IllegalArgumentException e) {
      // The reader checks every rule the record does; reaching this is a bug in one of them.
      problems.at(node, path, "invalid graph: " + e.getMessage());
      return null;
    }
  }

  private GraphSpec.Step step(Node node, String path, int index, GraphSources sources) {
    int before = problems.count();
    MappingReader m = reading.mapping(node, path);
    if (!m.valid()) {
      return null;
    }
    String name = m.requiredText("name");
    if (name != null) {
      String problem = GraphSpec.stepNameProblem(name);
      int first = sources.indexOf(name);
      if (problem == null && first < index) {
        problem = "duplicate step name '" + name + "' (also steps[" + first + "])";
      }
      if (problem != null) {
        problems.at(m.at("name"), m.path("name"), problem);
        name = null;
      }
    }
    String model = m.requiredText("model");
    ModelSignature signature = null;
    if (model != null) {
      signature = model(m, model);
      if (signature == null && !deployments.contains(model)) {
        model = null;
      }
    }
    MappingReader map = m.section("input_map");
    if (!map.present() && map.valid()) {
      problems.at(m.node(), m.path("input_map"), "missing required field 'input_map' (each input of the model with"
          + " where it comes from: input.NAME or STEP.OUTPUT)");
    }
    m.finish();
    Map<String, GraphSpec.Source> inputMap = new LinkedHashMap<>();
    if (map.present()) {
      for (NodeTuple t : map.entries()) {
        String input = ((ScalarNode) t.getKeyNode()).getValue();
        TensorSpec consumer = null;
        if (signature != null && !signature.inputs().isEmpty()) {
          consumer = signature.inputs().stream().filter(s -> s.name().equals(input)).findFirst().orElse(null);
          if (consumer == null) {
            problems.at(t.getKeyNode(), map.path(input), model + " has no input '" + input + "'"
                + Suggestions.didYouMean(input, signature.inputNames()) + "; its inputs: "
                + String.join(", ", signature.inputNames()));
            continue;
          }
        }
        String text = reading.text(t.getValueNode(), map.path(input));
        GraphSpec.Source src = text == null ? null : sources.resolve(text, t.getValueNode(), map.path(input), index,
            consumer, "input '" + input + "' of " + model);
        if (src != null) {
          inputMap.put(input, src);
        }
      }
      if (inputMap.isEmpty() && map.entries().isEmpty()) {
        problems.at(map.node(), map.path(), "map at least one input of the model");
      }
      if (signature != null && problems.count() == before) {
        for (String declared : signature.inputNames()) {
          if (!inputMap.containsKey(declared)) {
            problems.at(map.node(), map.path(), "input '" + declared + "' of " + model + " is not mapped; map every"
                + " input the model declares");
          }
        }
      }
    }
    if (name != null) {
      sources.stepRead(name, model, signature);
    }
    return problems.count() > before || name == null || model == null ? null
        : new GraphSpec.Step(name, model, inputMap);
  }

  /** The signature of the deployment a step calls, or null: unknown (reported), or known by name only. */
  private ModelSignature model(MappingReader m, String model) {
    if (!deployments.contains(model)) {
      problems.at(m.at("model"), m.path("model"), "unknown deployment '" + model + "'"
          + Suggestions.didYouMean(model, deployments)
          + (deployments.isEmpty() ? "; declare it under deployments:"
          : "; known deployments: " + String.join(", ", new TreeSet<>(deployments))));
      return null;
    }
    DeploymentSpec spec = specs.apply(model).orElse(null);
    if (spec == null) {
      return null;
    }
    if (spec.multiplexed()) {
      problems.at(m.at("model"), m.path("model"), "'" + model + "' is a repository of models loaded on demand; a"
          + " graph step calls a deployment of one model");
    } else if (spec.model().streaming()) {
      problems.at(m.at("model"), m.path("model"), "'" + model + "' streams its answer; a graph step takes one"
          + " answer per request");
    }
    return spec.model().signature();
  }

  private List<GraphSpec.Output> outputs(MappingReader graph, List<Node> nodes, GraphSources sources, int steps) {
    List<GraphSpec.Output> out = new ArrayList<>();
    if (nodes.isEmpty()) {
      problems.at(graph.at("outputs"), graph.path("outputs"), "declare at least one output");
      return out;
    }
    Map<String, Integer> seenNames = new HashMap<>();
    for (int i = 0; i < nodes.size(); i++) {
      String path = graph.path("outputs") + "[" + i + "]";
      MappingReader t = reading.mapping(nodes.get(i), path);
      TensorSpec tensor = tensors.one(t, i, seenNames, "output");
      String from = t.requiredText("from");
      t.finish();
      GraphSpec.Source src = from == null ? null : sources.resolve(from, t.at("from"), t.path("from"), steps, tensor,
          "the graph's output '" + (tensor == null ? "?" : tensor.name()) + "'");
      if (tensor != null && src != null) {
        out.add(new GraphSpec.Output(tensor, src));
      }
    }
    return out;
  }

  private void unusedInputs(MappingReader m, List<TensorSpec> inputs, List<GraphSpec.Step> steps,
                            List<GraphSpec.Output> outputs) {
    java.util.Set<String> used = new java.util.HashSet<>();
    steps.forEach(s -> s.inputMap().values().stream().filter(GraphSpec.Source::request)
        .forEach(src -> used.add(src.tensor())));
    outputs.stream().map(GraphSpec.Output::from).filter(GraphSpec.Source::request).forEach(src -> used.add(src.tensor()));
    List<Node> items = m.list("inputs", true);
    for (int i = 0; i < inputs.size(); i++) {
      if (!used.contains(inputs.get(i).name())) {
        problems.at(items.get(i), m.path("inputs") + "[" + i + "]", "input '" + inputs.get(i).name() + "' is read by"
            + " no step and no output; map it (input." + inputs.get(i).name() + ") or remove it");
      }
    }
  }

  /** The step names in file order, null where missing or not text: read first, to tell a later step apart. */
  private static List<String> stepNames(List<Node> steps) {
    List<String> names = new ArrayList<>();
    for (Node n : steps) {
      String name = null;
      if (n instanceof MappingNode mn) {
        for (NodeTuple t : mn.getValue()) {
          if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals("name")
              && t.getValueNode() instanceof ScalarNode v) {
            name = v.getValue();
          }
        }
      }
      names.add(name);
    }
    return names;
  }
}
