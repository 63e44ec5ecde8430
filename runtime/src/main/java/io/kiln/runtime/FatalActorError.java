package io.kiln.runtime;

/**
 * Thrown by an actor method to declare the actor broken: the actor is restarted if it has restarts left,
 * otherwise it dies. Any other {@link Error} thrown by a method has the same effect; ordinary exceptions
 * only fail the call.
 */
public class FatalActorError extends Error {

  public FatalActorError(String message) {
    super(message);
  }

  public FatalActorError(String message, Throwable cause) {
    super(message, cause);
  }
}
