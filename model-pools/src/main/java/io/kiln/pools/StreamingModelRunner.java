package io.kiln.pools;

import java.util.List;

/**
 * A {@link ModelRunner} whose model answers one request with a sequence of chunks (token-by-token generation,
 * incremental recognition, progress of a long analysis). The worker pulls the chunks one at a time with
 * {@link ChunkStream#next()}, only while the client's reader has room for another: a pull contract makes the
 * back-pressure and the cancellation explicit (the worker simply stops pulling and closes the stream), so a
 * model needs no sink or callback of its own. A worker holding several open streams advances them together, one
 * chunk each per step, with one {@link #next(List)} call per step (iteration-level batching: a new stream joins at
 * the next step, a finished one leaves). A model that can advance all its streams in one forward pass (an LLM's
 * decoding step) overrides {@link #next(List)}; the default pulls each stream in turn.
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

  /**
   * One step over several streams this runner opened: the next chunk of each, as one model call where the model
   * can. The worker calls it once per step with every open stream whose reader has room for one more chunk (so the
   * list changes from step to step as streams join, leave, or wait for their readers); it never passes a closed or
   * finished stream, nor one stream twice.
   *
   * <p>The default calls each stream's {@link ChunkStream#next()} in turn, turning an {@link InferenceException}
   * into that stream's {@link ChunkStep#failed failure}.
   *
   * @return one step per stream, in the order given
   * @throws ModelExecutionException or another runtime exception when the engine failed: every stream of the
   *     worker fails and the worker failed
   */
  default List<ChunkStep> next(List<ChunkStream> streams) {
    List<ChunkStep> out = new java.util.ArrayList<>(streams.size());
    for (ChunkStream s : streams) {
      try {
        List<Tensor> chunk = s.next();
        out.add(chunk == null ? ChunkStep.END : ChunkStep.of(chunk));
      } catch (InferenceException e) {
        out.add(ChunkStep.failed(e));
      }
    }
    return out;
  }
}
