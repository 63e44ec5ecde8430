package io.kiln.pools;

/**
 * The receiving end of one streamed answer, as {@link PoolClient#stream} opened it. Flow control is by credit:
 * the worker is at most {@link StreamTarget#window()} chunks ahead of what the receiver consumed; a chunk counts
 * as consumed once its {@link ChunkListener#chunk} returned while the stream is not paused. So a receiver that
 * cannot pass chunks on (an HTTP client that stopped reading) pauses the stream, and the worker stops pulling
 * from its model until it resumes: nothing is buffered without bound.
 *
 * <p><b>Withdrawing</b> a stream is cancelling its request's token ({@link RequestContext#cancellation()}), the one
 * way to withdraw any request: unqueued if it still waits, otherwise the worker stops before its next chunk and
 * frees its slot. The listener hears nothing more from then on (at once when the token is cancelled on the
 * stream's context, e.g. from a listener's callback; else once the cancel reached that context).
 *
 * <p><b>Threading:</b> call it on the context that opened the stream; the token may be cancelled from any thread.
 */
public interface ResponseStream {

  /** The stream's id, unique on this node. */
  String id();

  /** Stops granting credit: chunks delivered from now on count as consumed only at {@link #resume()}. */
  void pause();

  /** Grants the credit held back since {@link #pause()}. */
  void resume();
}
