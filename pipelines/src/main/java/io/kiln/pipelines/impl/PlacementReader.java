package io.kiln.pipelines.impl;

import io.kiln.pipelines.StepPlacement;
import io.kiln.runtime.Resources;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import java.util.List;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * Reads where a step may run: its {@code strategy:} (spread, default, {@code same_node_as} an earlier step, or
 * {@code node_with_resource}) and the {@code resources:} it holds while it runs, reporting each problem at its
 * position. The two share the rule for a resource's name, since a strategy may name one. Not thread-safe: one
 * instance per pipeline, as its {@link StepTable}.
 */
final class PlacementReader {

  private static final Pattern RESOURCE_KEY = Pattern.compile("[A-Za-z_][A-Za-z0-9_.-]{0,63}");

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
    if (!RESOURCE_KEY.matcher(resource).matches()) {
      problems.at(s.at("node_with_resource"), s.path("node_with_resource"), "'" + resource
          + "' is not a resource name (letters, digits, '_', '.', '-')");
      return null;
    }
    return StepPlacement.nodeWithResource(resource);
  }

  /** The resources section {@code r}, {@link Resources#NONE} if absent; null if wrong (reported). */
  Resources resources(MappingReader r) {
    if (!r.present()) {
      return r.valid() ? Resources.NONE : null;
    }
    Resources resources = Resources.NONE;
    boolean ok = true;
    for (var t : r.entries()) {
      String key = ((ScalarNode) t.getKeyNode()).getValue();
      String path = r.path(key);
      if (!RESOURCE_KEY.matcher(key).matches()) {
        problems.at(t.getKeyNode(), path, "'" + key + "' is not a resource name (letters, digits, '_', '.', '-')");
        ok = false;
        continue;
      }
      var amount = reading.decimal(t.getValueNode(), path, 0, 1_000_000);
      if (amount == null) {
        ok = false;
        continue;
      }
      try {
        resources = resources.with(key, amount.doubleValue());
      } catch (IllegalArgumentException e) {
        problems.at(t.getValueNode(), path, e.getMessage());
        ok = false;
      }
    }
    return ok ? resources : null;
  }
}
