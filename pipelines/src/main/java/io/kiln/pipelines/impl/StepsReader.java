package io.kiln.pipelines.impl;

import io.kiln.runtime.Resources;
import io.kiln.runtime.RetryPolicy;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.pipelines.StepSpec;
import java.time.Duration;
import java.util.List;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads the steps of one pipeline, reporting every problem with its position. It knows every step's name,
 * kind and position up front ({@link StepTable}), so a reference to an unknown step is told apart from one to a
 * later step. This class reads what every step has (name, one kind, resources, strategy, retries, timeout) and
 * builds the spec; {@link PlacementReader} reads where it runs, {@link ActionReader} what it does.
 * Not thread-safe: one instance per pipeline.
 */
final class StepsReader {

  private final Reading reading;
  private final Problems problems;
  private final List<Node> nodes;
  private final String path;
  private final StepTable steps;
  private final PlacementReader placements;
  private final ActionReader actions;

  /** @param source the YAML text the nodes come from, or null */
  StepsReader(Reading reading, InferModels models, StepClasses classes, List<Node> nodes, String path, String source) {
    this.reading = reading;
    this.problems = reading.problems();
    this.nodes = nodes;
    this.path = path;
    // Names and kinds first, so a reference to a later or unknown step can be told apart.
    this.steps = new StepTable(nodes, models);
    this.placements = new PlacementReader(reading, steps);
    this.actions = new ActionReader(reading, models, classes, steps, source);
  }

  /** Step {@code i} (read in order, each once), or null after reporting why not. */
  StepSpec step(int i) {
    String p = path + "[" + i + "]";
    int before = problems.count();
    MappingReader m = reading.mapping(nodes.get(i), p);
    if (!m.valid()) {
      return null;
    }
    String name = m.requiredText("name");
    if (name != null) {
      String problem = StepSpec.nameProblem(name);
      if (problem != null) {
        problems.at(m.at("name"), m.path("name"), problem);
      } else {
        int first = steps.indexOf(name);
        if (first >= 0 && first < i) {
          problems.at(m.at("name"), m.path("name"), "duplicate step name '" + name + "' (also " + path + "["
              + first + "])");
        }
      }
    }
    List<String> present = StepTable.KINDS.stream().filter(m::has).toList();
    Resources resources = placements.resources(m.section("resources"));
    StepPlacement placement = placements.placement(m, i);
    Integer retries = m.integer("retries", RetryPolicy.STEP_RETRY.maxRetries(), 0, StepSpec.MAX_RETRIES);
    Duration timeout = m.millis("timeout_ms", Duration.ofMillis(StepSpec.DEFAULT_TIMEOUT_MS), true);
    StepAction action = null;
    if (present.size() != 1) {
      problems.at(present.isEmpty() ? m.node() : m.keyAt(present.get(1)), p, present.isEmpty()
          ? "a step needs one of " + String.join(", ", StepTable.KINDS) + " (what it does)"
          : "a step does one thing: it has both '" + present.get(0) + "' and '" + present.get(1) + "'");
    } else {
      action = actions.read(present.get(0), m, i, placement);
    }
    if (action instanceof StepAction.Infer infer && m.value("strategy") == null) {
      placement = StepPlacement.sameNodeAs(infer.input()); // where its input is cached: pinned, never hoped for
    }
    if (action != null && !(action instanceof StepAction.Custom) && m.has("params")) {
      problems.at(m.keyAt("params"), m.path("params"), "only class steps take params");
    }
    m.finish();
    steps.read(i, placement, problems.count() > before ? null : action);
    if (problems.count() > before || action == null || placement == null || resources == null || retries == null
        || timeout == null) {
      return null;
    }
    try {
      return new StepSpec(name, action, resources, placement, retries, timeout.toMillis());
    } catch (IllegalArgumentException e) {
      problems.at(nodes.get(i), p, "invalid step: " + e.getMessage());
      return null;
    }
  }
}
