package io.kiln.serve.impl;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.SequenceSpec;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads a deployment's {@code sequence} section (docs/sequences.md) into model-pools' {@link SequenceSpec}, and
 * checks it against the deployment's model: every problem with its line and column. Not thread-safe.
 *
 * <pre>{@code
 * sequence:
 *   idle_timeout_ms: 60000
 *   max_sequences: 1024
 *   state: [{input: state, output: stateN, init: zeros}]   # init: zeros (default) or a number
 * }</pre>
 */
final class SequenceReader {

  static final String ZEROS = "zeros";

  private final Reading reading;
  private final Problems problems;

  SequenceReader(Reading reading) {
    this.reading = reading;
    this.problems = reading.problems();
  }

  /** The section's spec; null when absent or wrong (reported). */
  SequenceSpec read(MappingReader s) {
    if (!s.present()) {
      return null;
    }
    int before = problems.count();
    Duration idle = s.millis("idle_timeout_ms", SequenceSpec.DEFAULT_IDLE_TIMEOUT, true);
    Integer max = s.integer("max_sequences", SequenceSpec.DEFAULT_MAX_SEQUENCES, 1, SequenceSpec.MAX_MAX_SEQUENCES);
    List<Node> items = s.list("state", true);
    List<SequenceSpec.StateSpec> state = new ArrayList<>();
    if (items != null && items.isEmpty()) {
      problems.at(s.at("state"), s.path("state"), "declare at least one {input, output} pair");
    }
    for (int i = 0; items != null && i < items.size(); i++) {
      MappingReader t = reading.mapping(items.get(i), s.path("state") + "[" + i + "]");
      String input = t.requiredText("input");
      String output = t.requiredText("output");
      Double init = init(t);
      t.finish();
      if (input != null && output != null && init != null && t.present()) {
        try {
          state.add(new SequenceSpec.StateSpec(input, output, init));
        } catch (IllegalArgumentException e) {
          problems.at(items.get(i), t.path(), e.getMessage());
        }
      }
    }
    s.finish();
    if (problems.count() > before || idle == null || max == null) {
      return null;
    }
    try {
      return new SequenceSpec(idle, max, state);
    } catch (IllegalArgumentException e) {
      problems.at(s.node(), s.path(), e.getMessage());
      return null;
    }
  }

  /** {@code init}: {@value #ZEROS} (the default) or a finite number; null if wrong (reported). */
  private Double init(MappingReader t) {
    String text = t.text("init", ZEROS);
    if (text == null) {
      return null;
    }
    if (text.trim().equals(ZEROS)) {
      return 0.0;
    }
    try {
      double v = Double.parseDouble(text.trim());
      if (Double.isFinite(v)) {
        return v;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    problems.at(t.at("init"), t.path("init"), "must be " + ZEROS + " or a number, got '" + text + "'");
    return null;
  }

  /**
   * {@code model} keeping {@code sequence}'s state, or null when they do not fit (reported at the section, naming
   * the state entry: "sequence.state[0].input: 'x' is not among the model's inputs").
   */
  ModelSpec attach(ModelSpec model, SequenceSpec sequence, MappingReader s) {
    try {
      return model.toBuilder().sequence(sequence).build();
    } catch (IllegalArgumentException e) {
      String message = e.getMessage();
      Node at = s.node();
      String path = s.path();
      String prefix = "sequence.state[";
      if (message.startsWith(prefix)) {
        int end = message.indexOf(']');
        int index = Integer.parseInt(message.substring(prefix.length(), end));
        List<Node> items = s.list("state", false);
        if (items != null && index < items.size()) {
          MappingReader t = reading.mapping(items.get(index), s.path("state") + "[" + index + "]");
          String rest = message.substring(end + 1);
          String field = rest.startsWith(".input") ? "input" : rest.startsWith(".output") ? "output" : null;
          at = field != null ? t.at(field) : items.get(index);
          path = field != null ? t.path(field) : t.path();
          message = rest.substring(field != null ? field.length() + 1 : 0).replaceFirst("^:\\s*", "");
        }
      } else if (message.startsWith("sequence")) {
        message = message.replaceFirst("^sequence[.a-z_]*:?\\s*", "");
      }
      problems.at(at, path, message);
      return null;
    }
  }
}
