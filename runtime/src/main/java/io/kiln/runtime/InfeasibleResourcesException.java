package io.kiln.runtime;

/**
 * No node can ever satisfy the request (or a hard affinity target is dead or too small). Raised at once,
 * never after waiting; the message carries the numbers.
 */
public class InfeasibleResourcesException extends KilnException {

  public InfeasibleResourcesException(String message) {
    super(message);
  }
}
