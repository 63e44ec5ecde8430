package io.kiln.runtime;

/**
 * The actor may be alive but cannot take this call now: its mailbox is full, or it could not be reached.
 * Retrying later may succeed; the call did not run.
 */
public class ActorUnavailableException extends KilnException {

  public ActorUnavailableException(String message) {
    super(message);
  }
}
