package io.kiln.runtime;

/**
 * The actor's node could not be reached: the event-bus connection to it closed (its process died, or it stopped
 * answering the bus's pings within {@link ClusterOptions#busFailureDetect()}), while the node is still a cluster
 * member. A call in flight at that moment may or may not have run there; a call made while the node stays
 * unreachable was not sent. The node is not declared dead by this alone: membership still decides that (then
 * {@link ActorDiedException}), and calls go through again as soon as the connection is back.
 *
 * <p>Retrying on another node is safe only for idempotent work (the gateway re-routes an unpinned inference
 * request); retrying the same actor later may succeed.
 */
public class NodeUnreachableException extends ActorUnavailableException {

  private final String nodeId;

  public NodeUnreachableException(String nodeId, String message) {
    super(message);
    this.nodeId = nodeId;
  }

  /** The node that could not be reached. */
  public String nodeId() {
    return nodeId;
  }
}
