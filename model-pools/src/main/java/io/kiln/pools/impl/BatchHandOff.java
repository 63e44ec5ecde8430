package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.StreamCall;
import io.kiln.pools.Tensor;
import io.kiln.pools.trace.RequestLog;
import io.kiln.pools.trace.RequestTrace;
import io.kiln.runtime.RetryPolicy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The two ends of a batch's trip to its worker, for the {@link PoolDispatcher}: what the worker is sent (the
 * requests and their traces, {@link WorkerChannel#UNTRACED} when none is traced, or the stream calls of a batch of
 * streams), and, when the worker failed under it, which of its requests go back to the queue and which fail.
 * Stateless.
 */
final class BatchHandOff {

  private static final Logger LOG = LoggerFactory.getLogger(PoolDispatcher.class);

  private BatchHandOff() {
  }

  /**
   * Sends {@code batch} to {@code worker}; never throws: a channel that throws, or returns null, yields a failed
   * stage (a failure of the worker, as the {@link WorkerChannel} contract reads it).
   */
  static CompletionStage<List<List<Tensor>>> send(WorkerChannel worker, List<PendingRequest> batch, long nowNanos) {
    try {
      if (batch.get(0).stream != null) {
        List<StreamCall> calls = new ArrayList<>(batch.size());
        for (PendingRequest p : batch) {
          calls.add(new StreamCall(p.request, p.stream, Math.max(1, p.context.timeoutMs(nowNanos))));
        }
        return Objects.requireNonNull(worker.stream(calls), "stream returned null");
      }
      List<InferenceRequest> requests = new ArrayList<>(batch.size());
      List<RequestTrace> traces = WorkerChannel.UNTRACED; // until a traced request shows: nothing allocated
      for (int i = 0; i < batch.size(); i++) {
        PendingRequest p = batch.get(i);
        requests.add(p.request);
        RequestTrace trace = p.context.trace();
        if (trace != null && traces == WorkerChannel.UNTRACED) {
          traces = new ArrayList<>(batch.size());
          for (int j = 0; j < i; j++) {
            traces.add(null);
          }
        }
        if (traces != WorkerChannel.UNTRACED) {
          traces.add(trace);
        }
      }
      return Objects.requireNonNull(worker.infer(Collections.unmodifiableList(requests),
          traces == WorkerChannel.UNTRACED ? traces : Collections.unmodifiableList(traces)), "infer returned null");
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * The worker failed under {@code batch}: each request not settled yet is re-queued (state QUEUED, its re-queue
   * count raised) while its re-queues last and the queue ({@code queued} long now) has room, except streams,
   * whose chunks may have gone out already; the others fail UNAVAILABLE "worker X failed: cause".
   *
   * @return the requests to put back at the front of the queue, in batch order
   */
  static List<PendingRequest> failed(String workerId, List<PendingRequest> batch, Throwable cause, PoolConfig config,
                                     int queued, long nowNanos, Settlements settlements) {
    if (LOG.isWarnEnabled()) {
      try (RequestLog.Scope log = RequestLog.open(batch.get(0).requestId(), Settlements.traceId(batch.get(0)))) {
        LOG.warn("worker {} failed under a batch of {} requests ({}): {}", workerId, batch.size(), requestIds(batch),
            BatchResults.describe(cause));
      }
    }
    LOG.debug("worker {} failure", workerId, cause);
    InferenceException failed = new InferenceException(InferenceException.Kind.UNAVAILABLE,
        "worker " + workerId + " failed: " + BatchResults.describe(cause), cause);
    List<PendingRequest> again = new ArrayList<>();
    RetryPolicy requeue = config.requeuePolicy();
    for (PendingRequest p : batch) {
      if (p.state == PendingRequest.State.DONE) {
        continue;
      }
      // A sequence's request is never re-queued: its state was on the failed worker (see PoolSequences).
      if (p.stream == null && p.pin == null && requeue.allows(p.requeues + 1) && queued + again.size() < config.maxQueued()) {
        p.requeues++;
        if (LOG.isDebugEnabled()) {
          try (RequestLog.Scope log = RequestLog.open(p.requestId(), Settlements.traceId(p))) {
            LOG.debug("request {} re-queued (attempt {} under {}) after worker {} failed", p.requestId(),
                p.requeues + 1, requeue, workerId);
          }
        }
        p.state = PendingRequest.State.QUEUED;
        p.queuedSinceNanos = nowNanos;
        again.add(p);
      } else {
        settlements.settle(p, Outcome.FAILED, null, failed);
      }
    }
    return again;
  }

  private static String requestIds(List<PendingRequest> batch) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < batch.size() && i < 8; i++) {
      b.append(i == 0 ? "" : ", ").append(batch.get(i).requestId());
    }
    return batch.size() > 8 ? b.append(", ...").toString() : b.toString();
  }
}
