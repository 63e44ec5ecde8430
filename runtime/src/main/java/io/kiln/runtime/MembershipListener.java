package io.kiln.runtime;

/**
 * Told of cluster membership changes ({@link KilnRuntime#addMembershipListener}). Every node sees the same
 * join and leave events, in order per source.
 *
 * <p><b>Threading:</b> called off the registering thread (on the cluster's event thread); must not block.
 */
public interface MembershipListener {

  default void memberJoined(String memberId) {
  }

  /** A member left: shut down cleanly or was declared dead by failure detection (seconds). */
  default void memberLeft(String memberId) {
  }

  /** This node became (or stopped being) the leader, the oldest live member. */
  default void leaderChanged(boolean isLeader) {
  }
}
