package io.kiln.pools;

import java.util.Objects;

/**
 * Where the chunks of one streamed answer go and how many may be on their way: the receiving node's stream
 * endpoint (see {@link PoolClient#stream}), the stream's id there, the credit window and the chunk size limit.
 * It travels with the request to the worker, which sends each chunk straight to {@code replyNode}, never more
 * than {@code window} chunks ahead of the receiver's acknowledgements.
 *
 * @param streamId unique per receiving node and stream
 * @param replyNode the node whose stream endpoint receives the chunks (the caller's)
 * @param window chunks the worker may send before the receiver grants more credit, at least 1
 * @param maxChunkBytes the most tensor bytes one chunk may hold; a larger one fails the stream
 */
public record StreamTarget(String streamId, String replyNode, int window, int maxChunkBytes) {

  public StreamTarget {
    Objects.requireNonNull(streamId, "streamId");
    Objects.requireNonNull(replyNode, "replyNode");
    if (window < 1 || maxChunkBytes < 1) {
      throw new IllegalArgumentException("window and maxChunkBytes must be at least 1, got " + window + " and "
          + maxChunkBytes);
    }
  }
}
