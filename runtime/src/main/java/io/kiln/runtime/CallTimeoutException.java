package io.kiln.runtime;

/** No reply within the call's timeout. The call may or may not have run. */
public class CallTimeoutException extends KilnException {

  public CallTimeoutException(String message) {
    super(message);
  }
}
