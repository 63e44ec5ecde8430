package io.kiln.pools;

import java.util.List;

/**
 * One request's answer as its {@link StreamingModelRunner} produces it, pulled chunk by chunk. Not thread-safe:
 * used by the worker thread that opened it.
 */
public interface ChunkStream extends AutoCloseable {

  /**
   * Produces the next chunk; blocks for the model's work.
   *
   * @return the chunk's outputs (named as the spec declares them, in spec order, or in the order of the request's
   *     {@link InferenceRequest#outputs()} when it names some); null once the answer is complete
   * @throws InferenceException INTERNAL when the model failed this stream and said so (the stream is over, the
   *     runner is fine)
   * @throws ModelExecutionException or another runtime exception when the engine failed: the worker failed
   */
  List<Tensor> next();

  /** Stops generating (a cancelled or finished stream); idempotent. The runner stays usable. */
  @Override
  void close();
}
