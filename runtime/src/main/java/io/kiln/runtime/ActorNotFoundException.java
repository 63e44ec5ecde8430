package io.kiln.runtime;

/** No live actor has this name in this namespace. */
public class ActorNotFoundException extends KilnException {

  public ActorNotFoundException(String message) {
    super(message);
  }
}
