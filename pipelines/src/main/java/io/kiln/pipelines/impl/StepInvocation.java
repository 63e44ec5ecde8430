package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.StepAction;
import io.kiln.pipelines.StepResult;
import java.util.Map;
import java.util.Objects;

/**
 * The argument of the step task: everything the node running a step needs, already resolved (placeholders
 * filled, the deployment's version chosen). Encoded as CBOR when it crosses nodes.
 *
 * @param results earlier steps' results, by step name, in the order they ran
 * @param target the pool an infer step calls; null for other kinds
 */
public record StepInvocation(String runId, String pipeline, String step, int attempt, StepAction action,
                             Map<String, String> input, Map<String, StepResult> results, InferTarget target,
                             long timeoutMs) {

  public StepInvocation {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(step, "step");
    Objects.requireNonNull(action, "action");
    input = input == null ? Map.of() : input;
    results = results == null ? Map.of() : results;
  }
}
