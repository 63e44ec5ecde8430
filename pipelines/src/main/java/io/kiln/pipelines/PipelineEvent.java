package io.kiln.pipelines;

import io.kiln.runtime.WireCodec;
import java.util.Objects;

/**
 * A progress event of a run, published cluster-wide on the event bus address {@link #ADDRESS} (as JSON)
 * and kept in the run's status. Events of one run carry increasing {@code seq} numbers, except those a
 * step publishes itself from its node ({@code step_started}, {@code step_progress}: seq 0).
 *
 * @param type one of {@code run_started}, {@code step_queued}, {@code step_started}, {@code step_progress},
 *     {@code step_succeeded}, {@code step_failed}, {@code step_retry}, {@code node_lost}, {@code rerun},
 *     {@code run_succeeded}, {@code run_failed}, {@code webhook_sent}, {@code webhook_failed}
 * @param step the step concerned; empty for run-level events
 * @param nodeId the node concerned; empty if none
 * @param attempt the step's attempt (1-based) or 0
 */
public record PipelineEvent(String runId, String pipeline, long seq, String type, String step, String nodeId,
                            int attempt, long atMs, String message) {

  /** Event bus address every node publishes run events on. */
  public static final String ADDRESS = "kiln.pipeline-events";

  public PipelineEvent {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(type, "type");
    pipeline = pipeline == null ? "" : pipeline;
    step = step == null ? "" : step;
    nodeId = nodeId == null ? "" : nodeId;
    message = message == null ? "" : message;
  }

  /**
   * Reads the body of a message received on {@link #ADDRESS} (JSON text).
   *
   * @throws java.io.UncheckedIOException if it is not a run event
   */
  public static PipelineEvent fromMessage(Object body) {
    return WireCodec.fromJson(body.toString(), PipelineEvent.class);
  }

  /** Whether this event ends its run. */
  public boolean terminal() {
    return type.equals("run_succeeded") || type.equals("run_failed");
  }
}
