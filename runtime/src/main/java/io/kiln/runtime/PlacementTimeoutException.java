package io.kiln.runtime;

/** A feasible request waited for resources longer than its placement timeout. */
public class PlacementTimeoutException extends KilnException {

  public PlacementTimeoutException(String message) {
    super(message);
  }
}
