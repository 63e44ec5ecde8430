package io.kiln.runtime;

/**
 * A {@link SharedStore} entry whose stored form does not decode (written by another Kiln version, or
 * corrupt). Thrown by {@link SharedStore.Entry#value()}; the message names the store and the key, the
 * cause is the codec's error.
 */
public class UnreadableEntryException extends KilnException {

  public UnreadableEntryException(String message, Throwable cause) {
    super(message, cause);
  }
}
