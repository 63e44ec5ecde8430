package io.kiln.runtime.spi.cluster;

/** Told of membership changes; called off the caller's thread and must not block. */
public interface MembershipListener {

  default void memberJoined(String memberId) {
  }

  /** A member left: shut down cleanly or was declared dead by failure detection. */
  default void memberLeft(String memberId) {
  }

  /** This member became (or stopped being) the leader. */
  default void leaderChanged(boolean isLeader) {
  }
}
