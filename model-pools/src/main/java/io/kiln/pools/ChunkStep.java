package io.kiln.pools;

import java.util.List;
import java.util.Objects;

/**
 * What one stream got from a batched step ({@link StreamingModelRunner#next(List)}): its next chunk, nothing yet
 * ({@link #PENDING}), its end, or its own model error (the stream is over; the runner and the other streams of the
 * step are fine).
 *
 * @param chunk the chunk's outputs (as {@link ChunkStream#next()} returns them); null at the end or on failure
 * @param failure the stream's model error (INTERNAL, as {@link ChunkStream#next()} would raise it); null otherwise
 */
public record ChunkStep(List<Tensor> chunk, InferenceException failure) {

  /** The stream is complete. */
  public static final ChunkStep END = new ChunkStep(null, null);
  /**
   * The stream moved but has no chunk to send yet (a prompt part-way through a chunked prefill, a sequence waiting
   * for KV-cache room): nothing is sent, the stream stays open and is stepped again.
   */
  public static final ChunkStep PENDING = new ChunkStep(List.of(), null);

  public ChunkStep {
    if (chunk != null && failure != null) {
      throw new IllegalArgumentException("a step is a chunk or a failure, not both");
    }
  }

  public static ChunkStep of(List<Tensor> chunk) {
    return new ChunkStep(Objects.requireNonNull(chunk, "chunk"), null);
  }

  public static ChunkStep failed(InferenceException failure) {
    return new ChunkStep(null, Objects.requireNonNull(failure, "failure"));
  }

  /** Whether this step produced nothing to send and the stream goes on ({@link #PENDING}). */
  public boolean pending() {
    return this == PENDING;
  }

  /** Whether the stream is over (ended or failed). */
  public boolean over() {
    return chunk == null;
  }
}
