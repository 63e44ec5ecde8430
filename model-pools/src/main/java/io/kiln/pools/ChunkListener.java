package io.kiln.pools;

import java.util.Map;

/**
 * Receives one streamed answer (see {@link PoolClient#stream}): its chunks in order, then exactly one of
 * {@link #end} or {@link #error}. Every call comes on the Vert.x context that opened the stream, one at a time.
 */
public interface ChunkListener {

  /**
   * The next chunk: the request's id, the deployment and version, the chunk's outputs and parameters
   * {@code kiln_node} and {@code kiln_chunk} (its index, from 0).
   */
  void chunk(InferenceResponse chunk);

  /** The answer is complete; {@code parameters} holds {@code kiln_node} and {@code kiln_chunks} (how many). */
  void end(Map<String, Object> parameters);

  /**
   * The stream failed: an {@link InferenceException} whose kind says how (INTERNAL: the model failed mid-stream;
   * UNAVAILABLE: the worker or its node failed, the pool refused, or the stream was cancelled; DEADLINE_EXCEEDED;
   * INVALID_INPUT; TOO_LARGE: a chunk over the limit). Chunks delivered before it stand.
   */
  void error(Throwable error);
}
