package io.kiln.pipelines;

import com.fasterxml.jackson.annotation.JsonIgnore;
import io.kiln.runtime.Resources;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One step of a pipeline. Immutable; single-field rules are checked on construction
 * ({@link IllegalArgumentException}), cross-step rules by {@link PipelineSpec}.
 *
 * @param name unique within the pipeline: letters, digits, '_' and '-', at most 63
 * @param action what it does
 * @param resources held while it runs on its node; custom keys are per-node slots ({@code fetch_slot: 1}
 *     with {@code --resources '{"fetch_slot":4}'} allows four at once per node)
 * @param placement where it runs
 * @param retries attempts after the first one fails (the step must be deterministic with idempotent
 *     writes, which the built-ins are); placement on a node that left never counts as a retry
 * @param timeoutMs how long one attempt may run once placed
 */
public record StepSpec(String name, StepAction action, Resources resources, StepPlacement placement, int retries,
                       long timeoutMs) {

  public static final int MAX_RETRIES = 100;
  public static final long DEFAULT_TIMEOUT_MS = 600_000;
  private static final Pattern NAME = Pattern.compile("[A-Za-z][A-Za-z0-9_-]{0,62}");

  public StepSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(action, "action");
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(placement, "placement");
    String problem = nameProblem(name);
    if (problem != null) {
      throw new IllegalArgumentException("step name: " + problem);
    }
    if (retries < 0 || retries > MAX_RETRIES) {
      throw new IllegalArgumentException("retries must be in [0, " + MAX_RETRIES + "], got " + retries);
    }
    if (timeoutMs < 1) {
      throw new IllegalArgumentException("timeout_ms must be positive, got " + timeoutMs);
    }
  }

  /** Why {@code name} is not a valid step name, or null if it is. */
  public static String nameProblem(String name) {
    return NAME.matcher(name).matches() ? null
        : "'" + name + "' is not a step name: start with a letter; letters, digits, '_' and '-' only; at most 63";
  }

  @JsonIgnore
  public StepKind kind() {
    return action.kind();
  }
}
