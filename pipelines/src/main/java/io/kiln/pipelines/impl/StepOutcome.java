package io.kiln.pipelines.impl;

import java.util.Map;

/** What the step task returns: where and when it ran, and the step's result. */
public record StepOutcome(String nodeId, long startedAtMs, long endedAtMs, Map<String, Object> output) {

  public StepOutcome {
    output = output == null ? Map.of() : output;
  }
}
