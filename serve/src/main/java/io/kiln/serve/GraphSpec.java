package io.kiln.serve;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonValue;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.TensorSpec;
import io.kiln.serve.impl.Rules;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A model graph (Triton's ensemble, KServe's InferenceGraph): deployments called in order, each step's inputs mapped
 * from the request's inputs or from named outputs of earlier steps, served as one model of its own name. Every step
 * is a normal request to a pool of its deployment, so concurrent graph requests are batched per step by that step's
 * pool. Steps are in order and may read only the steps before them, so a graph has no cycle by construction.
 *
 * <p>Immutable; the structural rules (names, step order, every source declared before it is read) are checked on
 * construction ({@link IllegalArgumentException}); what needs the deployments' signatures (an unknown model, an
 * unmapped input, mismatched datatypes) is checked with positions by {@link DeploymentLoader#readGraphs}.
 *
 * @param name the model name clients call it by (as a deployment's: lowercase letters, digits, '-'); no deployment
 *     may have it
 * @param version the version its metadata reports ({@value #DEFAULT_VERSION} unless the file says otherwise)
 * @param inputs what a request supplies, as a model's inputs
 * @param steps 1 to {@value #MAX_STEPS} steps, run one after another
 * @param outputs what the graph answers, each taken from a request input or a step's output
 */
public record GraphSpec(String name, String version, List<TensorSpec> inputs, List<Step> steps,
                        List<Output> outputs) {

  public static final String DEFAULT_VERSION = "1";
  public static final int MAX_STEPS = 64;
  /** The source prefix of the request's own inputs: {@code input.image}. No step may be named so. */
  public static final String REQUEST = "input";
  private static final Pattern STEP_NAME = Pattern.compile("[A-Za-z][A-Za-z0-9_-]{0,62}");

  /**
   * One step: a request to a pool of {@code deployment} (the version it serves when the request runs).
   *
   * @param inputMap the model's inputs, each with where its tensor comes from, in the file's order
   */
  public record Step(String name, String deployment, Map<String, Source> inputMap) {
    public Step {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(deployment, "deployment");
      inputMap = Collections.unmodifiableMap(new LinkedHashMap<>(inputMap));
      if (inputMap.isEmpty()) {
        throw new IllegalArgumentException("step '" + name + "' maps no input");
      }
    }
  }

  /** One output of the graph: its declared tensor and where it comes from. */
  public record Output(TensorSpec tensor, Source from) {
    public Output {
      Objects.requireNonNull(tensor, "tensor");
      Objects.requireNonNull(from, "from");
    }

    @JsonIgnore
    public String name() {
      return tensor.name();
    }
  }

  /**
   * Where a tensor comes from: {@code input.NAME} (the request's input NAME) or {@code STEP.OUTPUT} (output OUTPUT of
   * an earlier step: the first '.' ends the step's name, so output names may hold dots), optionally followed by
   * {@code [i]}: row i of that tensor, its first dimension dropped ({@code crop.crops[0]} of a [1, n, 3, 48, W]
   * answer is [n, 3, 48, W]).
   *
   * @param step the step, or {@link #REQUEST}
   * @param row the row selected, or -1 for the whole tensor
   */
  public record Source(String step, String tensor, int row) {

    public Source {
      Objects.requireNonNull(step, "step");
      Objects.requireNonNull(tensor, "tensor");
      if (step.isEmpty() || tensor.isEmpty()) {
        throw new IllegalArgumentException("a source names a step (or 'input') and a tensor, got '" + step + "."
            + tensor + "'");
      }
      if (row < -1) {
        throw new IllegalArgumentException("a row index is >= 0, got " + row);
      }
    }

    /**
     * Reads {@code input.NAME}, {@code STEP.OUTPUT} or either with {@code [i]}.
     *
     * @throws IllegalArgumentException saying what the text should look like
     */
    @JsonCreator
    public static Source parse(String text) {
      String t = text == null ? "" : text.trim();
      int row = -1;
      int open = t.lastIndexOf('[');
      if (t.endsWith("]") && open > 0) {
        String digits = t.substring(open + 1, t.length() - 1);
        if (!digits.matches("[0-9]{1,9}")) {
          throw new IllegalArgumentException("'" + text + "': a row is a whole number in brackets, e.g. "
              + "crop.crops[0]");
        }
        row = Integer.parseInt(digits);
        t = t.substring(0, open);
      }
      int dot = t.indexOf('.');
      if (dot <= 0 || dot == t.length() - 1) {
        throw new IllegalArgumentException("'" + text + "' is not a source: write " + REQUEST + ".NAME (a request"
            + " input) or STEP.OUTPUT (an earlier step's output), optionally with [ROW]");
      }
      return new Source(t.substring(0, dot), t.substring(dot + 1), row);
    }

    /** Whether it is one of the request's inputs. */
    @JsonIgnore
    public boolean request() {
      return step.equals(REQUEST);
    }

    @JsonValue
    @Override
    public String toString() {
      return step + "." + tensor + (row >= 0 ? "[" + row + "]" : "");
    }
  }

  public GraphSpec {
    Objects.requireNonNull(name, "name");
    version = version == null ? DEFAULT_VERSION : version;
    inputs = List.copyOf(inputs);
    steps = List.copyOf(steps);
    outputs = List.copyOf(outputs);
    Rules.require("name", Rules.name(name));
    Rules.require("version", Rules.version(version));
    if (inputs.isEmpty() || outputs.isEmpty()) {
      throw new IllegalArgumentException("graph '" + name + "' needs at least one input and one output");
    }
    if (steps.isEmpty() || steps.size() > MAX_STEPS) {
      throw new IllegalArgumentException("graph '" + name + "' needs 1 to " + MAX_STEPS + " steps, got "
          + steps.size());
    }
    Set<String> inputNames = unique("input", inputs.stream().map(TensorSpec::name).toList());
    unique("output", outputs.stream().map(Output::name).toList());
    Map<String, Integer> index = new HashMap<>();
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      String problem = stepNameProblem(s.name());
      if (problem != null) {
        throw new IllegalArgumentException("steps[" + i + "].name: " + problem);
      }
      if (index.putIfAbsent(s.name(), i) != null) {
        throw new IllegalArgumentException("steps[" + i + "]: duplicate step name '" + s.name() + "'");
      }
      for (var e : s.inputMap().entrySet()) {
        String why = sourceProblem(e.getValue(), inputNames, index, i);
        if (why != null) {
          throw new IllegalArgumentException("steps[" + i + "].input_map." + e.getKey() + ": " + why);
        }
      }
    }
    for (int o = 0; o < outputs.size(); o++) {
      String why = sourceProblem(outputs.get(o).from(), inputNames, index, steps.size());
      if (why != null) {
        throw new IllegalArgumentException("outputs[" + o + "].from: " + why);
      }
    }
  }

  /** Why {@code name} cannot name a step of a graph, or null if it can. */
  public static String stepNameProblem(String name) {
    if (name.equals(REQUEST)) {
      return "'" + REQUEST + "' names the request's inputs (" + REQUEST + ".NAME); call the step something else";
    }
    return STEP_NAME.matcher(name).matches() ? null
        : "'" + name + "' is not a step name: start with a letter; letters, digits, '_' and '-' only; at most 63";
  }

  private static String sourceProblem(Source s, Set<String> inputs, Map<String, Integer> steps, int before) {
    if (s.request()) {
      return inputs.contains(s.tensor()) ? null : "the graph has no input '" + s.tensor() + "'";
    }
    Integer at = steps.get(s.step());
    return at != null && at < before ? null : "'" + s.step() + "' is not a step before this one";
  }

  private static Set<String> unique(String kind, List<String> names) {
    Set<String> seen = new LinkedHashSet<>();
    for (String n : names) {
      if (!seen.add(n)) {
        throw new IllegalArgumentException("duplicate " + kind + " '" + n + "'");
      }
    }
    return seen;
  }

  /** What clients see: the graph's inputs and outputs, as a model's. */
  @JsonIgnore
  public ModelSignature signature() {
    List<TensorSpec> outs = new ArrayList<>(outputs.size());
    outputs.forEach(o -> outs.add(o.tensor()));
    return new ModelSignature(inputs, outs);
  }

  /** The deployments its steps call, each once, in step order. */
  @JsonIgnore
  public Set<String> deployments() {
    Set<String> out = new LinkedHashSet<>();
    steps.forEach(s -> out.add(s.deployment()));
    return Collections.unmodifiableSet(out);
  }

  /** The step of that name, or null. */
  public Step step(String stepName) {
    for (Step s : steps) {
      if (s.name().equals(stepName)) {
        return s;
      }
    }
    return null;
  }

  /**
   * For each step, the outputs a later step or the graph's outputs read: what its request asks its pool for. Every
   * step gets an entry (maybe empty: nothing reads it, its pool answers all its outputs).
   */
  @JsonIgnore
  public Map<String, Set<String>> outputsRead() {
    Map<String, Set<String>> read = new LinkedHashMap<>();
    steps.forEach(s -> read.put(s.name(), new LinkedHashSet<>()));
    steps.forEach(s -> s.inputMap().values().forEach(src -> addRead(read, src)));
    outputs.forEach(o -> addRead(read, o.from()));
    return read;
  }

  private static void addRead(Map<String, Set<String>> read, Source src) {
    if (!src.request()) {
      read.get(src.step()).add(src.tensor());
    }
  }
}
