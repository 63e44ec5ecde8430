package io.kiln.pipelines;

/** Where a run is in its life. */
public enum RunState {
  RUNNING, SUCCEEDED, FAILED;

  public boolean terminal() {
    return this != RUNNING;
  }
}
