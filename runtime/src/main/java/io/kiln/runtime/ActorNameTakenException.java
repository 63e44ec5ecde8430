package io.kiln.runtime;

/** Creating a named actor without get-if-exists found the name already held by a live actor. */
public class ActorNameTakenException extends KilnException {

  public ActorNameTakenException(String message) {
    super(message);
  }
}
