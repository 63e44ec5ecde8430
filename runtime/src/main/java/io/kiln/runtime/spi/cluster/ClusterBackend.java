package io.kiln.runtime.spi.cluster;

import io.kiln.runtime.MembershipListener;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Membership and shared state for Kiln's runtime: which nodes are members, who leads, and a few shared
 * maps (node table, named-actor registry, and the typed {@link io.kiln.runtime.SharedStore}s the runtime
 * builds on them for components above it). Hazelcast is the clustered implementation; an in-memory one
 * serves single-process runs and tests. Listeners are the runtime's public {@link MembershipListener}.
 *
 * <p>Every implementation must guarantee:
 * <ol>
 *   <li><b>Atomic conditional writes.</b> {@link SharedMap#putIfAbsent}, {@link SharedMap#replace} and
 *       {@link SharedMap#remove(String, String)} are linearizable per key across the cluster: of concurrent
 *       callers racing on one key exactly one {@code putIfAbsent} wins. Named-actor get-or-create relies on
 *       this.</li>
 *   <li><b>One view of membership.</b> Every member sees the same set of members and, over time, the same
 *       join/leave events; a member that crashes is reported as left to all others within the failure
 *       detection timeout (seconds, not minutes).</li>
 *   <li><b>One leader.</b> {@link #isLeader()} is true on exactly one live member at a time once membership
 *       has settled: the oldest. When it leaves, the next oldest becomes leader and is told through
 *       {@link MembershipListener#leaderChanged}.</li>
 *   <li><b>Non-blocking callers.</b> Methods returning {@link CompletionStage} never block the calling
 *       thread (an implementation backed by blocking I/O runs it elsewhere). {@link #members()},
 *       {@link #isLeader()} and {@link #localMemberId()} answer from local state at once.</li>
 *   <li><b>Listeners are called off the caller's thread, in order per source</b>, and must not block.</li>
 *   <li><b>Explicit encoding.</b> Map values are strings (JSON written by Kiln's codecs); nothing is
 *       Java-serialized.</li>
 * </ol>
 */
public interface ClusterBackend {

  /** The node id this member runs as. */
  String localMemberId();

  /** Ids of the live members, this one included. */
  List<String> members();

  /** Whether this member is the leader (the oldest live member). */
  boolean isLeader();

  /** A named shared map, created on first use; {@link io.kiln.runtime.SharedStore}s are views of these. */
  SharedMap map(String name);

  void addMembershipListener(MembershipListener listener);

  /**
   * Whether split-brain protection refuses writes to the map {@code name} while fewer than
   * {@link #minClusterSize()} members are present (such a write fails with
   * {@link io.kiln.runtime.BelowMinimumClusterSizeException}). False where there is no protection.
   */
  default boolean isProtected(String name) {
    return false;
  }

  /** The minimum cluster size split-brain protection enforces; 1 where there is none. */
  default int minClusterSize() {
    return 1;
  }

  /** Leaves the cluster gracefully; other members see this member leave. */
  CompletionStage<Void> leave();
}
