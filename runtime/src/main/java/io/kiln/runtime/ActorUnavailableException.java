package io.kiln.runtime;

/**
 * The actor may be alive but cannot take this call now: its mailbox is full, or it could not be reached.
 * Retrying later may succeed. A full mailbox refused the call before it ran; a {@link NodeUnreachableException}
 * (the connection to the actor's node broke) may come after the call ran there.
 */
public class ActorUnavailableException extends KilnException {

  public ActorUnavailableException(String message) {
    super(message);
  }
}
