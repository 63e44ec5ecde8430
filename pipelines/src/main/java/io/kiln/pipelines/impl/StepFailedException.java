package io.kiln.pipelines.impl;

/** A step attempt failed for a reason the step states; its message becomes the step's error. */
public final class StepFailedException extends RuntimeException {

  public StepFailedException(String message) {
    super(message);
  }

  public StepFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
