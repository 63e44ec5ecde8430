package io.kiln.runtime;

/**
 * The actor is dead (permanently, or died while running this call with no task retries left). The
 * message says which actor and why: constructor failure, a fatal error, killed, restarts exhausted,
 * owner died, or node died.
 */
public class ActorDiedException extends KilnException {

  private final String actorId;

  public ActorDiedException(String actorId, String message) {
    super(message);
    this.actorId = actorId;
  }

  public ActorDiedException(String actorId, String message, Throwable cause) {
    super(message, cause);
    this.actorId = actorId;
  }

  public String actorId() {
    return actorId;
  }
}
