package io.kiln.pools;

/**
 * A {@link ModelRunner} whose model answers one request with a sequence of chunks (token-by-token generation,
 * incremental recognition, progress of a long analysis). The worker pulls the chunks one at a time with
 * {@link ChunkStream#next()}, only while the client's reader has room for another: a pull contract makes the
 * back-pressure and the cancellation explicit (the worker simply stops pulling and closes the stream), so a
 * model needs no sink or callback of its own. A worker holding several open streams advances them in turn, one
 * chunk each per step (iteration-level batching: a new stream joins at the next step, a finished one leaves).
 *
 * <p><b>Threading:</b> as {@link ModelRunner}: one worker thread owns the runner and every stream it opened,
 * and calls them serially; {@link #open} and {@link ChunkStream#next()} block that thread for their work.
 *
 * <p>{@link #infer} of a streaming runner answers the first chunk of each request (warm-up uses it); the pools
 * serve streaming models only through {@link #open}.
 */
public interface StreamingModelRunner extends ModelRunner {

  /**
   * Starts generating the answer to {@code request} (trusted, as for {@link #infer}).
   *
   * @throws InferenceException INVALID_INPUT when the request cannot run, INTERNAL when the model refused it and
   *     said so (a Python {@code predict_stream} that raised before its first chunk): the runner is fine
   * @throws ModelExecutionException or another runtime exception when the engine failed: the worker failed
   */
  ChunkStream open(InferenceRequest request);
}
