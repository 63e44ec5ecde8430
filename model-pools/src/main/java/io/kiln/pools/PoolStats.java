package io.kiln.pools;

/**
 * A snapshot of one pool's load and history, cheap enough to poll on every routing decision. Each field
 * is exact at some instant, but fields are read one by one, so they need not add up across fields while
 * the pool is busy.
 *
 * @param queueDepth requests waiting for a worker
 * @param inFlightRequests requests in batches that workers are executing (including any whose client was
 *     already answered by its deadline or went away: the worker is still busy with them)
 * @param inFlightBatches batches that workers are executing
 * @param idleWorkers workers ready for a batch
 * @param busyWorkers workers executing a batch (including ones being removed that finish their batch)
 * @param totalWorkers idle, busy and failed workers (failed ones wait to be restarted or removed)
 * @param completed requests answered with outputs
 * @param rejected requests refused at submit: queue full, draining or closed
 * @param expired requests answered with DEADLINE_EXCEEDED
 * @param failed requests failed because workers failed (after requeues) or the pool closed
 * @param invalid requests failed with INVALID_INPUT, by the pool or by a worker
 * @param cancelled requests whose client cancelled before an answer
 * @param requeued times a request was queued again after its worker failed
 */
public record PoolStats(int queueDepth, int inFlightRequests, int inFlightBatches, int idleWorkers, int busyWorkers,
                        int totalWorkers, long completed, long rejected, long expired, long failed, long invalid,
                        long cancelled, long requeued) {

  /** Workers out of rotation after a failure, waiting for the manager to restart or remove them. */
  public int failedWorkers() {
    return totalWorkers - idleWorkers - busyWorkers;
  }

  /** Requests accepted and not yet handed to a worker or answered, plus those being executed. */
  public int outstanding() {
    return queueDepth + inFlightRequests;
  }
}
