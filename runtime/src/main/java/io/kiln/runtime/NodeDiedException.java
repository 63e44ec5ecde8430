package io.kiln.runtime;

/** The node running a call or task left the cluster before answering. Tasks retry this by default. */
public class NodeDiedException extends KilnException {

  public NodeDiedException(String message) {
    super(message);
  }
}
