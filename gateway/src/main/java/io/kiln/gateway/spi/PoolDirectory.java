package io.kiln.gateway.spi;

import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ValidatedRequest;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Where the pools of a model version are and how to send them work.
 *
 * <p>Contract for implementations:
 * <ol>
 *   <li>Methods must not block: the gateway calls them on Vert.x event loops.</li>
 *   <li>{@link #pools} lists at most one pool per node, with load figures fresh enough to route by (a
 *       snapshot refreshed by the pools' own reports is fine).</li>
 *   <li>{@link #send} returns at once; the future may complete on any thread. It fails with an
 *       {@link io.kiln.pools.InferenceException} whose kind says what went wrong (a full queue is a
 *       {@link io.kiln.pools.CapacityExceededException}); any other exception is treated as an internal
 *       error.</li>
 *   <li>Cancellation propagates: when the gateway cancels the request's token ({@code context.cancellation()}:
 *       the client went away or the deadline passed), the implementation drops the request if it is still queued
 *       and discards the result if it is already running. Cancelling after the answer has no effect.</li>
 *   <li>The pool does not start work on a request whose {@code deadlineNanos} has passed; it fails it with
 *       kind {@code DEADLINE_EXCEEDED}.</li>
 * </ol>
 */
public interface PoolDirectory {

  /**
   * The pools hosting a model version, one per node; empty if none.
   *
   * @param model the model name
   * @param version the resolved version (never null)
   */
  List<PoolEndpoint> pools(String model, String version);

  /**
   * Sends one request to one pool. It passed the model's validator at this gateway, so the pool does not
   * check it again.
   *
   * @param target one of the endpoints {@link #pools} returned
   * @param context its id, deadline (on the {@link System#nanoTime()} clock of this JVM), trace context (carried to
   *     the pool and its worker for their log lines and spans) and priority
   * @return the response; the context's token withdraws the request (see the class contract)
   */
  CompletableFuture<InferenceResponse> send(PoolEndpoint target, String model, String version,
                                            ValidatedRequest request, io.kiln.pools.RequestContext context);

  /**
   * Sends one request to one pool of a streaming model and receives its answer chunk by chunk (see
   * {@link io.kiln.pools.PoolClient#stream}): the listener hears the chunks in order, then exactly one of end or
   * error, on the calling Vert.x context; the returned stream pauses and resumes it. Cancelling the context's token
   * withdraws it, as it withdraws a request sent (see the class contract): the listener hears nothing more, and the
   * pool unqueues the stream or its worker stops before its next chunk. Returns at once. Directories without
   * streaming refuse it (the default).
   *
   * @param context the stream's id, deadline (for the whole stream), trace context, priority and token
   * @param window chunks the worker may send ahead of what the listener consumed
   * @param maxChunkBytes the most tensor bytes one chunk may hold
   */
  default io.kiln.pools.ResponseStream stream(PoolEndpoint target, String model, String version,
                                              ValidatedRequest request, io.kiln.pools.RequestContext context,
                                              int window,
                                              int maxChunkBytes, io.kiln.pools.ChunkListener listener) {
    throw new io.kiln.pools.InferenceException(io.kiln.pools.InferenceException.Kind.UNAVAILABLE,
        "this gateway's pools cannot stream");
  }
}
