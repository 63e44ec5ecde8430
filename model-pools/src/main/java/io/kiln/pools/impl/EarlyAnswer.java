package io.kiln.pools.impl;

import io.kiln.pools.Tensor;
import java.util.List;

/**
 * Where a request's outputs go the moment its worker answers, on the thread that answered (a local worker's model
 * thread), before the dispatcher's own bookkeeping for the batch reaches the dispatcher's thread: so the answer goes
 * straight to its caller and waits neither for that hand-off nor for the bookkeeping (see
 * {@link PoolDispatcher#submit(io.kiln.pools.InferenceRequest, io.kiln.pools.RequestContext, boolean,
 * io.kiln.pools.StreamTarget, String, boolean, EarlyAnswer)}).
 *
 * <p>Called at most once per request, only with outputs (failures, deadlines and cancels take the dispatcher's own
 * way), and only if nothing else ended the request first: the request is claimed for it, so a deadline or cancel
 * that arrives later counts the request as answered. Must be thread-safe, quick, and must not block or throw.
 */
@FunctionalInterface
public interface EarlyAnswer {

  /**
   * @param dispatchedNanos when its batch left the dispatcher, on the dispatcher's clock
   * @param answeredNanos when the worker answered, on the same clock
   */
  void answered(List<Tensor> outputs, long dispatchedNanos, long answeredNanos);
}
