package io.kiln.pipelines.impl;

import io.kiln.pipelines.InputFormat;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepPlacement;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Suggestions;
import java.util.Arrays;
import java.util.List;

/**
 * Reads an infer step's section, reporting every problem with its position: what it calls (a deployment or a graph),
 * the earlier fetch step whose cached file it reads (named with {@code input}, else its strategy's anchor or the
 * nearest fetch before it), the input format and tensor; and checks that a strategy it is given runs it where that
 * file is. Not thread-safe: one instance per pipeline, as its {@link StepTable}.
 */
final class InferReader {

  private final Problems problems;
  private final InferModels models;
  private final StepTable steps;

  InferReader(Problems problems, InferModels models, StepTable steps) {
    this.problems = problems;
    this.models = models;
    this.steps = steps;
  }

  /**
   * Step {@code i}'s action, or null after reporting why not.
   *
   * @param placement the step's placement as its strategy reads, or null if that was wrong (reported)
   */
  StepAction.Infer read(MappingReader m, int i, StepPlacement placement) {
    MappingReader f = m.section("infer");
    InferModels.Target target = models.read(f, problems);
    String input = f.text("input", null);
    if (input == null && f.value("input") == null) {
      input = defaultInput(i, placement);
      // A step before it of unknown kind is reported already; its kind may have been meant to be fetch.
      if (input == null && !steps.unknownKindBefore(i)) {
        problems.at(f.node(), f.path("input"), "an infer step reads a file an earlier fetch step cached: add a"
            + " fetch step before it, or name it with 'input'");
      }
    } else if (input != null && !isFetchBefore(input, i)) {
      problems.at(f.at("input"), f.path("input"), "input '" + input + "' must name an earlier fetch step"
          + steps.hint(input, i));
      input = null;
    }
    var format = format(f);
    String tensor = f.text("tensor", "");
    f.finish();
    if (input != null && placement != null && m.value("strategy") != null && !pinnedTo(placement, input, i)) {
      problems.at(m.at("strategy"), m.path("strategy"), "an infer step reads its input where '" + input
          + "' cached it: its strategy must be same_node_as: " + input + " (or omitted), got " + placement);
      return null;
    }
    return target == null || input == null || format == null || tensor == null ? null
        : new StepAction.Infer(target.name(), input, format, tensor, target.graph());
  }

  private InputFormat format(MappingReader f) {
    String v = f.text("format", InputFormat.RAW.spelling());
    if (v == null) {
      return null;
    }
    for (var fmt : InputFormat.values()) {
      if (fmt.spelling().equals(v)) {
        return fmt;
      }
    }
    List<String> names = Arrays.stream(InputFormat.values())
        .map(InputFormat::spelling).toList();
    problems.at(f.at("format"), f.path("format"), "unknown format '" + v + "'" + Suggestions.didYouMean(v, names)
        + "; expected one of: " + String.join(", ", names));
    return null;
  }

  /** The fetch step an unnamed input means: the anchor of its placement, else the nearest earlier fetch. */
  private String defaultInput(int i, StepPlacement placement) {
    if (placement != null && placement.kind() == StepPlacement.Kind.SAME_NODE_AS) {
      int a = steps.anchor(steps.indexOf(placement.target()));
      return a >= 0 && "fetch".equals(steps.kind(a)) ? steps.name(a) : null;
    }
    for (int k = i - 1; k >= 0; k--) {
      if ("fetch".equals(steps.kind(k))) {
        return steps.name(k);
      }
    }
    return null;
  }

  private boolean isFetchBefore(String step, int i) {
    int k = steps.indexOf(step);
    return k >= 0 && k < i && "fetch".equals(steps.kind(k));
  }

  private boolean pinnedTo(StepPlacement placement, String step, int i) {
    if (placement.kind() != StepPlacement.Kind.SAME_NODE_AS) {
      return false;
    }
    int t = steps.indexOf(placement.target());
    return t >= 0 && t < i && steps.anchor(t) == steps.indexOf(step);
  }
}
