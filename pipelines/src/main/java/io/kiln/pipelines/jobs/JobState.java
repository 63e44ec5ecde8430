package io.kiln.pipelines.jobs;

/** Where a job is. */
public enum JobState {
  /** Inputs are being dispatched or are in flight. */
  RUNNING,
  /** Every input has its result. */
  SUCCEEDED,
  /** Every input was tried; some failed after their retries (their causes are counted). */
  FAILED,
  /** Cancelled: nothing new is dispatched; what was in flight finished or was dropped. */
  CANCELLED,
  /** Its coordinating node left before it ended; {@link Jobs#resume} picks it up where the output stands. */
  INTERRUPTED;

  public boolean terminal() {
    return this != RUNNING;
  }
}
