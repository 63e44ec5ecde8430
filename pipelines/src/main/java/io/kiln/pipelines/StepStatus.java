package io.kiln.pipelines;

import java.util.Map;
import java.util.Objects;

/**
 * One step of a run as last recorded. Times are epoch milliseconds, 0 when not (yet) known.
 *
 * @param nodeId where the current or last attempt ran; empty before it was placed
 * @param attempts attempts started in the current pass (a re-run after a node loss starts again at 0)
 * @param queuedAtMs when the current attempt was submitted
 * @param startedAtMs when it started on its node (after waiting for resources)
 * @param endedAtMs when it finished
 * @param error why the last attempt failed; empty if it did not
 * @param output the step's result once it succeeded (JSON-like values)
 */
public record StepStatus(String name, StepKind kind, StepState state, String nodeId, int attempts, long queuedAtMs,
                         long startedAtMs, long endedAtMs, String error, Map<String, Object> output) {

  public StepStatus {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(state, "state");
    nodeId = nodeId == null ? "" : nodeId;
    error = error == null ? "" : error;
    output = output == null ? Map.of() : output;
  }

  public static StepStatus pending(StepSpec spec) {
    return new StepStatus(spec.name(), spec.kind(), StepState.PENDING, "", 0, 0, 0, 0, "", Map.of());
  }
}
