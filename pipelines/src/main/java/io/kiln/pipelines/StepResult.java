package io.kiln.pipelines;

import java.util.Map;
import java.util.Objects;

/**
 * What a step that succeeded produced, where and when it ran.
 *
 * @param output JSON-like values (numbers may come back as any {@link Number} type after crossing nodes)
 * @param startedAtMs when its attempt started on its node (epoch millis; 0 when unknown)
 * @param endedAtMs when it ended there
 */
public record StepResult(String step, String nodeId, Map<String, Object> output, long startedAtMs, long endedAtMs) {

  /** A result without timings. */
  public StepResult(String step, String nodeId, Map<String, Object> output) {
    this(step, nodeId, output, 0, 0);
  }

  public StepResult {
    Objects.requireNonNull(step, "step");
    Objects.requireNonNull(nodeId, "nodeId");
    output = output == null ? Map.of() : output;
  }

  /** A text field of the output, or empty if absent. */
  public String text(String key) {
    Object v = output.get(key);
    return v == null ? "" : v.toString();
  }

  /** A numeric field of the output. */
  public long number(String key) {
    Object v = output.get(key);
    if (v instanceof Number n) {
      return n.longValue();
    }
    throw new IllegalArgumentException("step '" + step + "' has no numeric output '" + key + "'");
  }
}
