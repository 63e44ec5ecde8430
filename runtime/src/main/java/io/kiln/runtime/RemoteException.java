package io.kiln.runtime;

/**
 * An application exception raised on another node whose type has no registered wire codec: the original
 * class name and message are kept, the stack trace is not.
 */
public class RemoteException extends KilnException {

  private final String remoteClass;

  public RemoteException(String remoteClass, String message) {
    super(remoteClass + ": " + message);
    this.remoteClass = remoteClass;
  }

  public String remoteClass() {
    return remoteClass;
  }
}
