package io.kiln.control;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Any node's last log lines, as {@link LogsApi} serves them: the answering node's own, and another's by asking that
 * node. The node implements it (deploy's {@code NodeLogs}, over the clustered event bus).
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>Methods must not block: {@link LogsApi} calls them on event loops. The stage completes on the caller's
 *       context (or at once).</li>
 *   <li>{@link #read} fails with {@link NoSuchNode} for a node that is not in the cluster or does not answer; any
 *       other failure means the node answered but its lines could not be read.</li>
 *   <li>A chunk holds at most {@code max} (never more than {@link #maxLines}) lines, oldest first.</li>
 * </ol>
 */
public interface LogSource {

  /** The answering node's id (the node {@link LogsApi} reads when none is named). */
  String nodeId();

  /** The most lines one {@link #read} returns (and {@link LogsApi} accepts in {@code lines}). */
  int maxLines();

  /** Up to {@code max} lines of {@code node} after sequence number {@code after} (negative: its last {@code max}). */
  CompletionStage<Chunk> read(String node, long after, int max);

  /**
   * Lines, oldest first; {@code next} is the sequence number to read after for the lines that follow; {@code skipped}
   * counts the lines lost between {@code after} and the first line because the node's buffer turned over.
   */
  record Chunk(List<String> lines, long next, long skipped) {
  }

  /** A node that is not in the cluster or does not answer (404 from {@link LogsApi}). */
  final class NoSuchNode extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NoSuchNode(String message) {
      super(message);
    }
  }
}
