package io.kiln.runtime;

/** Base of the runtime's own failures. Application exceptions thrown by actor methods reach callers as is. */
public class KilnException extends RuntimeException {

  public KilnException(String message) {
    super(message);
  }

  public KilnException(String message, Throwable cause) {
    super(message, cause);
  }
}
