package io.kiln.pipelines.impl;

import io.kiln.pipelines.StepAction;
import io.kiln.serve.yaml.MappingReader;
import io.kiln.serve.yaml.Problems;
import io.kiln.serve.yaml.Reading;
import io.kiln.serve.yaml.Suggestions;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Reads a generate step's section, reporting every problem with its position: the deployment (known, a text
 * generation model where its signature is known), the prompt (its {@code ${input.NAME}} placeholders well formed,
 * each {@code {{STEP.FIELD}}} naming an earlier step and, where that step's result fields are known, one of them),
 * and the sampling settings. Not thread-safe: one use per step.
 */
final class GenerateReader {

  /** What the reader knows of the steps of the pipeline when it reads one. */
  interface Steps {
    /** The index of the step named so, or -1. */
    int indexOf(String name);

    /** The names of the steps before {@code i}. */
    List<String> before(int i);

    /**
     * The fields of step {@code k}'s result (an earlier step): empty when the step itself had problems (reported
     * there), null when any field may be there.
     */
    Set<String> fields(int k);
  }

  private GenerateReader() {
  }

  /** The step's action, or null after reporting why not. */
  /** @param source the YAML text the nodes come from (to place a reference's problem at the reference), or null */
  static StepAction.Generate read(Reading reading, InferModels models, MappingReader m, int i, Steps steps,
                                  String source) {
    Problems problems = reading.problems();
    MappingReader f = m.section("generate");
    if (!f.valid()) {
      return null;
    }
    String deployment = models.generator(f, problems);
    String prompt = prompt(problems, f, i, steps, source);
    String format = f.text("format", "chat");
    Boolean chat = null;
    if (format != null) {
      if (format.equals("chat") || format.equals("text")) {
        chat = format.equals("chat");
      } else {
        problems.at(f.at("format"), f.path("format"), "unknown format '" + format + "'"
            + Suggestions.didYouMean(format, List.of("chat", "text")) + "; expected chat (the prompt is one user"
            + " message, rendered by the model's chat template) or text (the prompt as is)");
      }
    }
    Integer maxTokens = f.integer("max_tokens", StepAction.Generate.DEFAULT_MAX_TOKENS, 1, 1 << 20);
    Double temperature = number(reading, f, "temperature", 0.0, 0, 2, false);
    Double topP = number(reading, f, "top_p", null, 0, 1, true);
    Integer topK = f.integer("top_k", null, 0, Integer.MAX_VALUE);
    Long seed = null;
    boolean seedOk = true;
    if (f.value("seed") != null) {
      seed = reading.integer(f.value("seed"), f.path("seed"), Long.MIN_VALUE, Long.MAX_VALUE);
      seedOk = seed != null;
    }
    List<String> stop = stop(reading, f);
    f.finish();
    if (deployment == null || prompt == null || chat == null || maxTokens == null || temperature == null
        || (f.has("top_p") && topP == null) || (f.has("top_k") && topK == null) || !seedOk || stop == null) {
      return null;
    }
    return new StepAction.Generate(deployment, prompt, chat, maxTokens, temperature, topP, topK, seed, stop);
  }

  private static String prompt(Problems problems, MappingReader f, int i, Steps steps, String source) {
    String prompt = f.requiredText("prompt");
    if (prompt == null) {
      return null;
    }
    Node at = f.at("prompt");
    String path = f.path("prompt");
    if (prompt.isEmpty() || prompt.length() > StepAction.Generate.MAX_PROMPT_CHARS) {
      problems.at(at, path, "a prompt holds 1 to " + StepAction.Generate.MAX_PROMPT_CHARS + " characters, got "
          + prompt.length());
      return null;
    }
    String problem = StepReferences.problem(prompt);
    if (problem != null) {
      problems.at(at, path, problem);
      return null;
    }
    boolean ok = true;
    for (StepReferences.Ref ref : StepReferences.refs(prompt)) {
      String refProblem = refProblem(ref, i, steps);
      if (refProblem != null) {
        int[] where = position(source, at, ref.written());
        if (where == null) {
          problems.at(at, path, refProblem);
        } else {
          problems.at(where[0], where[1], path, refProblem);
        }
        ok = false;
      }
    }
    return ok ? prompt : null;
  }

  /**
   * The 1-based line and column of {@code written} in the source text of the scalar {@code at}, or null when it is not
   * there as written (an escape inside it, a folded line) or the source is unknown.
   */
  static int[] position(String source, Node at, String written) {
    if (source == null || at.getStartMark() == null || at.getEndMark() == null) {
      return null;
    }
    try {
      int from = source.offsetByCodePoints(0, at.getStartMark().getIndex());
      int to = source.offsetByCodePoints(from, at.getEndMark().getIndex() - at.getStartMark().getIndex());
      int k = source.indexOf(written, from);
      if (k < 0 || k + written.length() > to) {
        return null;
      }
      int line = at.getStartMark().getLine();
      int column = at.getStartMark().getColumn();
      for (int c = from; c < k; c = source.offsetByCodePoints(c, 1)) {
        if (source.charAt(c) == '\n') {
          line++;
          column = 0;
        } else {
          column++;
        }
      }
      return new int[] {line + 1, column + 1};
    } catch (IndexOutOfBoundsException e) {
      return null; // marks that do not index this text: report at the field
    }
  }

  private static String refProblem(StepReferences.Ref ref, int i, Steps steps) {
    int k = steps.indexOf(ref.step());
    String where = "reference '" + ref.written() + "': ";
    if (k == i) {
      return where + "a step cannot read its own result";
    }
    if (k < 0) {
      List<String> earlier = steps.before(i);
      return where + "no step named '" + ref.step() + "'" + Suggestions.didYouMean(ref.step(), earlier)
          + (earlier.isEmpty() ? "; it is the first step" : "; earlier steps: " + String.join(", ", earlier));
    }
    if (k > i) {
      return where + "'" + ref.step() + "' is a later step (steps[" + k + "]); a prompt reads steps that ran before"
          + " this one";
    }
    Set<String> fields = steps.fields(k);
    if (fields != null && !fields.isEmpty() && !fields.contains(ref.field())) {
      return where + "step '" + ref.step() + "' has no field '" + ref.field() + "'"
          + Suggestions.didYouMean(ref.field(), fields) + "; its result has: "
          + String.join(", ", new TreeSet<>(fields));
    }
    return null;
  }

  /** A number in [min, max] ((min, max] when {@code openMin}), {@code dflt} when absent; null if wrong (reported). */
  private static Double number(Reading reading, MappingReader f, String key, Double dflt, long min, long max,
                               boolean openMin) {
    Node v = f.value(key);
    if (v == null) {
      return dflt;
    }
    BigDecimal d = reading.decimal(v, f.path(key), min, max);
    if (d == null) {
      return null;
    }
    if (openMin && d.signum() <= 0) {
      reading.problems().at(v, f.path(key), key + " must be greater than " + min + ", got " + d.toPlainString());
      return null;
    }
    return d.doubleValue();
  }

  private static List<String> stop(Reading reading, MappingReader f) {
    Node v = f.value("stop");
    if (v == null) {
      return List.of();
    }
    String path = f.path("stop");
    List<Node> items = v instanceof SequenceNode ? reading.list(v, path) : List.of(v);
    if (items == null) {
      return null;
    }
    if (items.size() > StepAction.Generate.MAX_STOPS) {
      reading.problems().at(v, path, "at most " + StepAction.Generate.MAX_STOPS + " stop strings, got " + items.size());
      return null;
    }
    List<String> out = new ArrayList<>();
    for (int k = 0; k < items.size(); k++) {
      Node item = items.get(k);
      String at = v instanceof SequenceNode ? path + "[" + k + "]" : path;
      String s = item instanceof ScalarNode ? reading.text(item, at) : null;
      if (s == null || s.isEmpty()) {
        if (s != null || !(item instanceof ScalarNode)) {
          reading.problems().at(item, at, "a stop string must be a non-empty string");
        }
        return null;
      }
      out.add(s);
    }
    return out;
  }
}
