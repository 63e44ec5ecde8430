package io.kiln.pipelines.impl;

import io.kiln.pipelines.StepPlacement;
import io.kiln.runtime.Resources;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.ResourcesSection;
import io.kiln.serve.yaml.Suggestions;
import java.util.List;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * Reads where a step may run: its {@code strategy:} (spread, default, {@code same_node_as} an earlier step, or
 * {@code node_with_resource}) and the {@code resources:} it holds while it runs, reporting each problem at its
 * position. Both read names and amounts as a pool's {@code worker_resources} are read ({@link ResourcesSection}).
 * Not thread-safe: one instance per pipeline, as its {@link StepTable}.
 */
final class PlacementReader {

  private final Reading reading;
  private final Problems problems;
  private final StepTable steps;

  PlacementReader(Reading reading, StepTable steps) {
    this.reading = reading;
    this.problems = reading.problems();
    this.steps = steps;
  }

  /** Step {@code i}'s placement, {@link StepPlacement#DEFAULT} if it has no strategy; null if wrong (reported). */
  StepPlacement placement(MappingReader m, int i) {
    Node v = m.value("strategy");
    if (v == null) {
      return StepPlacement.DEFAULT; // an infer step's default is decided by its input, later
    }
    String path = m.path("strategy");
    if (v instanceof ScalarNode s) {
      String text = reading.text(s, path);
      if (text == null) {
        return null;
      }
      switch (text) {
        case "spread" -> {
          return StepPlacement.SPREAD;
        }
        case "default" -> {
          return StepPlacement.DEFAULT;
        }
        default -> {
          problems.at(v, path, "unknown strategy '" + text + "'"
              + Suggestions.didYouMean(text, List.of("spread", "default"))
              + "; expected spread, default, {same_node_as: STEP} or {node_with_resource: KEY}");
          return null;
        }
      }
    }
    MappingReader s = reading.mapping(v, path);
    if (!s.valid()) {
      return null;
    }
    String same = s.text("same_node_as", null);
    String resource = s.text("node_with_resource", null);
    boolean both = s.has("same_node_as") && s.has("node_with_resource");
    boolean neither = !s.has("same_node_as") && !s.has("node_with_resource");
    s.finish();
    if (both || neither) {
      problems.at(v, path, both ? "a strategy is either same_node_as or node_with_resource, not both"
          : "a strategy mapping needs same_node_as: STEP or node_with_resource: KEY");
      return null;
    }
    if (same == null && resource == null) {
      return null; // not text: reported
    }
    if (same != null) {
      int t = steps.indexOf(same);
      if (t == i) {
        problems.at(s.at("same_node_as"), s.path("same_node_as"), "a step cannot follow itself");
      } else if (t < 0) {
        problems.at(s.at("same_node_as"), s.path("same_node_as"), "no step named '" + same + "'"
            + steps.hint(same, i));
      } else if (t > i) {
        problems.at(s.at("same_node_as"), s.path("same_node_as"), "'" + same + "' is a later step (steps[" + t
            + "]); same_node_as names a step that ran before this one");
      } else {
        return StepPlacement.sameNodeAs(same);
      }
      return null;
    }
    return ResourcesSection.checkName(problems, s.at("node_with_resource"), s.path("node_with_resource"), resource)
        ? StepPlacement.nodeWithResource(resource) : null;
  }

  /** The resources section {@code r}, {@link Resources#NONE} if absent; null if wrong (reported). */
  Resources resources(MappingReader r) {
    return ResourcesSection.read(reading, r, Resources.NONE);
  }
}
