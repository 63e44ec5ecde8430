package io.kiln.pools.impl;

import io.kiln.pools.InferenceRequest;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * When each request was handed to a worker and when that worker answered, so the manager can report
 * queue and compute time per response. Keyed by request identity: a pool manager sees each request object
 * once (it is its own copy, decoded or passed by one caller). Owned by the manager's thread, except
 * {@link Stamp#done}, which the thread completing a worker call writes before the dispatcher hands the
 * completion over (a happens-before edge).
 */
public final class DispatchTimes {

  /** One dispatched batch. */
  public static final class Stamp {
    final long dispatchedNanos;
    private volatile long doneNanos;

    Stamp(long dispatchedNanos) {
      this.dispatchedNanos = dispatchedNanos;
    }

    void done(long nanos) {
      doneNanos = nanos;
    }

    public long dispatchedNanos() {
      return dispatchedNanos;
    }

    /** When the worker answered, or 0 if it has not. */
    public long doneNanos() {
      return doneNanos;
    }
  }

  private final Map<InferenceRequest, Stamp> stamps = new IdentityHashMap<>();

  Stamp dispatched(List<InferenceRequest> batch, long nowNanos) {
    Stamp s = new Stamp(nowNanos);
    for (InferenceRequest r : batch) {
      stamps.put(r, s);
    }
    return s;
  }

  /** Forgets a request and returns its last batch's stamp, or null if it was never dispatched. */
  public Stamp take(InferenceRequest request) {
    return stamps.remove(request);
  }

  /** Forgets everything (the pool closed). */
  public void clear() {
    stamps.clear();
  }
}
