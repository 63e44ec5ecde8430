package io.kiln.pipelines.impl;

import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import io.kiln.pipelines.OnNodeLoss;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pipelines.StepSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads the {@code pipelines:} section of a deployment file from its positioned node tree, reporting every
 * problem with line and column (as the deployment reader does) and building specs only for pipelines
 * without problems. Not thread-safe: one instance per document.
 */
public final class PipelineReader {

  /** Pipelines per file at most. */
  public static final int MAX_PIPELINES = 100;


  private final Reading reading;
  private final Problems problems;
  private final InferModels models;
  private final StepClasses classes;
  private String source; // null: problems inside a text field are reported at the field

  /**
   * @param deployments names of the deployments an infer step may use (this file's and those already
   *     deployed)
   * @param classes checks user step classes; {@link StepClasses#UNCHECKED} to skip
   */
  public PipelineReader(Reading reading, Set<String> deployments, StepClasses classes) {
    this(reading, deployments, Set.of(), classes);
  }

  /**
   * @param deployments names of the deployments an infer step may use (this file's and those already deployed)
   * @param graphs names of the model graphs an infer step may use ({@code graph: NAME}), likewise
   * @param classes checks user step classes; {@link StepClasses#UNCHECKED} to skip
   */
  public PipelineReader(Reading reading, Set<String> deployments, Set<String> graphs, StepClasses classes) {
    this(reading, deployments, graphs, Map.of(), Map.of(), classes);
  }

  /**
   * As {@link #PipelineReader(Reading, Set, Set, StepClasses)}, with what is known of the models' signatures, so that
   * a generate step names a text generation model and a {@code {{STEP.FIELD}}} reference to an infer step names one
   * of its outputs (those whose signature is not known here are checked when the step runs).
   *
   * @param signatures deployments' signatures by name
   * @param graphOutputs graphs' output names by name
   */
  public PipelineReader(Reading reading, Set<String> deployments, Set<String> graphs,
                        Map<String, io.kiln.pools.ModelSignature> signatures, Map<String, Set<String>> graphOutputs,
                        StepClasses classes) {
    this.reading = reading;
    this.problems = reading.problems();
    this.models = new InferModels(deployments, graphs, signatures, graphOutputs);
    this.classes = classes;
  }

  /**
   * The YAML text the nodes were composed from, so that a problem inside a text field (a prompt's reference) is
   * reported at its own line and column rather than the field's.
   */
  public PipelineReader source(String text) {
    this.source = text;
    return this;
  }

  /** The pipelines of {@code section} (the value of {@code pipelines:}), complete only if nothing was reported. */
  public List<PipelineSpec> read(Node section, String path) {
    List<PipelineSpec> out = new ArrayList<>();
    List<Node> items = reading.list(section, path);
    if (items == null) {
      return out;
    }
    if (items.size() > MAX_PIPELINES) {
      problems.at(section, path, items.size() + " pipelines; at most " + MAX_PIPELINES + " per file");
      return out;
    }
    Map<String, String> seen = new HashMap<>();
    for (int i = 0; i < items.size(); i++) {
      PipelineSpec p = pipeline(items.get(i), path + "[" + i + "]", seen);
      if (p != null) {
        out.add(p);
      }
    }
    return out;
  }

  private PipelineSpec pipeline(Node node, String path, Map<String, String> seen) {
    int before = problems.count();
    MappingReader m = reading.mapping(node, path);
    if (!m.valid()) {
      return null;
    }
    String name = m.requiredText("name");
    if (name != null) {
      String problem = PipelineSpec.nameProblem(name);
      if (problem != null) {
        problems.at(m.at("name"), m.path("name"), problem);
      } else {
        String first = seen.putIfAbsent(name, path);
        if (first != null) {
          problems.at(m.at("name"), m.path("name"), "duplicate pipeline '" + name + "' (also " + first + ")");
        }
      }
    }
    OnNodeLoss onNodeLoss = onNodeLoss(m);
    Integer maxReruns = m.integer("max_reruns", PipelineSpec.DEFAULT_MAX_RERUNS, 0, PipelineSpec.MAX_RERUNS);
    Duration timeout = m.millis("timeout_ms", Duration.ofMillis(PipelineSpec.DEFAULT_TIMEOUT_MS), true);
    String webhook = ActionReader.template(problems, m, "webhook", "");
    List<Node> stepNodes = m.list("steps", true);
    m.finish();
    List<StepSpec> steps = new ArrayList<>();
    if (stepNodes != null) {
      if (stepNodes.isEmpty()) {
        problems.at(m.at("steps"), m.path("steps"), "declare at least one step");
      } else if (stepNodes.size() > PipelineSpec.MAX_STEPS) {
        problems.at(m.at("steps"), m.path("steps"), stepNodes.size() + " steps; at most " + PipelineSpec.MAX_STEPS);
      } else {
        StepsReader r = new StepsReader(reading, models, classes, stepNodes, m.path("steps"), source);
        for (int i = 0; i < stepNodes.size(); i++) {
          StepSpec s = r.step(i);
          if (s != null) {
            steps.add(s);
          }
        }
      }
    }
    if (problems.count() > before) {
      return null;
    }
    try {
      return new PipelineSpec(name, steps, onNodeLoss, maxReruns, webhook, timeout.toMillis());
    } catch (IllegalArgumentException e) {
      // The reader checks every rule the record does; reaching this is a bug in one of them.
      problems.at(node, path, "invalid pipeline: " + e.getMessage());
      return null;
    }
  }

  private OnNodeLoss onNodeLoss(MappingReader m) {
    String v = m.text("on_node_loss", OnNodeLoss.FAIL.spelling());
    if (v == null) {
      return null;
    }
    for (OnNodeLoss o : OnNodeLoss.values()) {
      if (o.spelling().equals(v)) {
        return o;
      }
    }
    List<String> names = Arrays.stream(OnNodeLoss.values()).map(OnNodeLoss::spelling).toList();
    problems.at(m.at("on_node_loss"), m.path("on_node_loss"), "unknown on_node_loss '" + v + "'"
        + Suggestions.didYouMean(v, names) + "; expected fail (the run fails, naming the node) or rerun (the chain"
        + " re-runs from the step that chose the node)");
    return null;
  }


}
