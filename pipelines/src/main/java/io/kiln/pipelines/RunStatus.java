package io.kiln.pipelines;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A run as last recorded in the cluster (any node can read it): its state, each step's state, node and
 * timings, and its recent events. Times are epoch milliseconds, 0 when not (yet) known.
 *
 * @param coordinator the node coordinating the run (the one that accepted it); if it leaves the cluster
 *     the leader marks the run FAILED
 * @param input the run's input (placeholders in the pipeline's steps were filled from it)
 * @param reruns re-runs after node losses so far
 * @param error why the run failed; empty otherwise
 * @param webhook where the final status is POSTed; empty for nowhere
 * @param events the most recent events, oldest first (at most {@link #MAX_EVENTS})
 */
public record RunStatus(String runId, String pipeline, RunState state, String coordinator, Map<String, String> input,
                        List<StepStatus> steps, int reruns, long createdAtMs, long endedAtMs, String error,
                        String webhook, List<PipelineEvent> events) {

  public static final int MAX_EVENTS = 256;

  public RunStatus {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(pipeline, "pipeline");
    Objects.requireNonNull(state, "state");
    coordinator = coordinator == null ? "" : coordinator;
    input = input == null ? Map.of() : Map.copyOf(input);
    steps = List.copyOf(steps);
    error = error == null ? "" : error;
    webhook = webhook == null ? "" : webhook;
    events = events == null ? List.of() : List.copyOf(events);
  }

  public Optional<StepStatus> step(String name) {
    return steps.stream().filter(s -> s.name().equals(name)).findFirst();
  }

  /** The same run in another state (the leader uses it to fail runs whose coordinator died). */
  public RunStatus ended(RunState newState, String why, long atMs, List<StepStatus> newSteps,
                         List<PipelineEvent> newEvents) {
    return new RunStatus(runId, pipeline, newState, coordinator, input, newSteps, reruns, createdAtMs, atMs, why,
        webhook, newEvents);
  }
}
