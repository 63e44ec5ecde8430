package io.kiln.pipelines;

/** Where one step of a run is. */
public enum StepState {
  /** Not reached yet. */
  PENDING,
  /** Submitted: waiting for a node with its resources (slots) free, or on its way there. */
  WAITING,
  /** Running on {@link StepStatus#nodeId()}. */
  RUNNING,
  SUCCEEDED,
  FAILED,
  /** Never ran: the run failed before reaching it. */
  SKIPPED
}
