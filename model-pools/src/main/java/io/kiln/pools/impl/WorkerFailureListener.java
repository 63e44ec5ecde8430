package io.kiln.pools.impl;

/**
 * Told by the {@link PoolDispatcher} when a worker failed under a batch and was taken out of rotation, so
 * that the pool manager can restart it and {@link PoolDispatcher#addWorker add it} again under the same id,
 * or {@link PoolDispatcher#removeWorker remove it}. Called on the dispatcher's thread after the failed
 * batch's requests were re-queued or failed; it must not block, and may call back into the dispatcher.
 * Not called for a worker that was already being removed.
 */
@FunctionalInterface
public interface WorkerFailureListener {

  WorkerFailureListener NONE = (workerId, cause) -> { };

  void workerFailed(String workerId, Throwable cause);
}
