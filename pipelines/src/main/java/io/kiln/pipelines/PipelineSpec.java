package io.kiln.pipelines;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A pipeline: ordered steps run one after another for each run. Immutable; every rule is checked on
 * construction ({@link IllegalArgumentException}), so a spec built in code obeys what
 * {@link PipelineLoader} checks with positions.
 *
 * @param name the pipeline's name in URLs ({@code /api/v1/pipelines/<name>/runs}): lowercase letters,
 *     digits and '-', at most 63
 * @param steps at least one, names unique; a {@code same_node_as} target is an earlier step; an
 *     {@code infer} step's input is an earlier {@code fetch} step
 * @param onNodeLoss what a run does when a pinned step's node left
 * @param maxReruns how many times one run may re-run its chain after node losses ({@link OnNodeLoss#RERUN})
 * @param webhook URL (placeholders allowed) POSTed the final run status on completion or failure; empty for
 *     none (a run request may name its own)
 * @param timeoutMs a run still unfinished after this long fails
 */
public record PipelineSpec(String name, List<StepSpec> steps, OnNodeLoss onNodeLoss, int maxReruns, String webhook,
                           long timeoutMs) {

  public static final int MAX_STEPS = 64;
  public static final int DEFAULT_MAX_RERUNS = 1;
  public static final int MAX_RERUNS = 10;
  public static final long DEFAULT_TIMEOUT_MS = 3_600_000;
  private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

  public PipelineSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(onNodeLoss, "onNodeLoss");
    webhook = webhook == null ? "" : webhook;
    steps = List.copyOf(steps);
    String problem = nameProblem(name);
    if (problem != null) {
      throw new IllegalArgumentException("name: " + problem);
    }
    if (steps.isEmpty() || steps.size() > MAX_STEPS) {
      throw new IllegalArgumentException("a pipeline needs 1 to " + MAX_STEPS + " steps, got " + steps.size());
    }
    if (maxReruns < 0 || maxReruns > MAX_RERUNS) {
      throw new IllegalArgumentException("max_reruns must be in [0, " + MAX_RERUNS + "], got " + maxReruns);
    }
    if (timeoutMs < 1) {
      throw new IllegalArgumentException("timeout_ms must be positive, got " + timeoutMs);
    }
    Map<String, Integer> index = new HashMap<>();
    for (int i = 0; i < steps.size(); i++) {
      StepSpec s = steps.get(i);
      if (index.putIfAbsent(s.name(), i) != null) {
        throw new IllegalArgumentException("steps[" + i + "]: duplicate step name '" + s.name() + "'");
      }
      String p = referenceProblem(s, i, index, steps);
      if (p != null) {
        throw new IllegalArgumentException("steps[" + i + "]: " + p);
      }
    }
  }

  /** Why {@code name} is not a valid pipeline name, or null. */
  public static String nameProblem(String name) {
    return NAME.matcher(name).matches() ? null
        : "'" + name + "' is not a valid pipeline name: lowercase letters, digits and '-', starting and ending"
            + " with a letter or digit, at most 63";
  }

  /** A step's references to other steps: they must name earlier steps of the right kind. */
  private static String referenceProblem(StepSpec s, int i, Map<String, Integer> earlier, List<StepSpec> all) {
    if (s.placement().kind() == StepPlacement.Kind.SAME_NODE_AS) {
      String target = s.placement().target();
      Integer t = earlier.get(target);
      if (t == null || t == i) {
        return "same_node_as '" + target + "' must name an earlier step";
      }
    }
    if (s.action() instanceof StepAction.Generate g) {
      String problem = io.kiln.pipelines.impl.StepReferences.problem(g.prompt());
      if (problem != null) {
        return "prompt: " + problem;
      }
      for (var ref : io.kiln.pipelines.impl.StepReferences.refs(g.prompt())) {
        Integer t = earlier.get(ref.step());
        if (t == null || t == i) {
          return "prompt reference '" + ref.written() + "' must name an earlier step";
        }
      }
    }
    if (s.action() instanceof StepAction.Infer infer) {
      Integer t = earlier.get(infer.input());
      if (t == null || t == i || all.get(t).kind() != StepKind.FETCH) {
        return "infer input '" + infer.input() + "' must name an earlier fetch step";
      }
      boolean pinned = s.placement().kind() == StepPlacement.Kind.SAME_NODE_AS;
      if (!pinned || !all.get(anchorOf(all, i, earlier)).name().equals(infer.input())) {
        return "an infer step reads its input on the node that fetched it: its placement must be"
            + " same_node_as '" + infer.input() + "' (or a step pinned there)";
      }
    }
    return null;
  }

  /** The index of the step that chose the node a {@code same_node_as} chain ends on (the step itself if not pinned). */
  private static int anchorOf(List<StepSpec> steps, int i, Map<String, Integer> index) {
    int at = i;
    for (int hops = 0; hops <= steps.size(); hops++) {
      StepPlacement p = steps.get(at).placement();
      if (p.kind() != StepPlacement.Kind.SAME_NODE_AS) {
        return at;
      }
      Integer next = index.get(p.target());
      if (next == null || next >= at) {
        return at;
      }
      at = next;
    }
    return at;
  }

  /** The index of the step named {@code step}, or -1. */
  public int indexOf(String step) {
    for (int i = 0; i < steps.size(); i++) {
      if (steps.get(i).name().equals(step)) {
        return i;
      }
    }
    return -1;
  }

  public Optional<StepSpec> step(String step) {
    int i = indexOf(step);
    return i < 0 ? Optional.empty() : Optional.of(steps.get(i));
  }

  /**
   * The index of the step whose node step {@code i} is pinned to through {@code same_node_as} (following
   * chains), or {@code i} itself if it is not pinned: where a re-run after a node loss starts.
   */
  public int anchorOf(int i) {
    Map<String, Integer> index = new HashMap<>();
    for (int k = 0; k < steps.size(); k++) {
      index.put(steps.get(k).name(), k);
    }
    return anchorOf(steps, i, index);
  }

  @JsonIgnore
  public Optional<String> completionWebhook() {
    return webhook.isEmpty() ? Optional.empty() : Optional.of(webhook);
  }
}
