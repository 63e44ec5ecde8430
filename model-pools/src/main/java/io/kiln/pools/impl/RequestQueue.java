package io.kiln.pools.impl;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The queue of requests waiting for a worker: an intrusive doubly-linked list (cancel and expiry unlink
 * from the middle in O(1)) that also keeps, per {@link BatchKey}, how many rows are queued, so that
 * "is there a full batch for the head?" costs a map lookup, not a scan. Not thread-safe: the dispatcher's
 * thread owns it. The bound ({@code maxQueued}) is enforced by the dispatcher, not here.
 *
 * <p><b>Order.</b> Arrival order, except that a NORMAL request goes ahead of the LOW ones (a job's) that arrived
 * less than {@link #LOW_YIELD_NANOS} before it: a LOW request yields to online traffic for that long, then keeps
 * its place like any other, so it is delayed, never starved. (In effect a LOW request is queued as if it had arrived
 * {@code LOW_YIELD_NANOS} later.) The yielding LOW requests are always the queue's tail, so placing a NORMAL one
 * costs O(1) amortised: a cursor to the first of them only moves forward. Requests re-queued after a worker failed
 * go first, whatever their priority. A batch headed by a NORMAL request still takes LOW ones of its shape behind it
 * into its spare rows.
 */
final class RequestQueue {

  /** How long a LOW request lets NORMAL requests that arrive after it go first. */
  static final long LOW_YIELD_NANOS = 1_000_000_000L;

  /** The first LOW request that may still be yielding, or null; every request from it to the tail is LOW. */
  private PendingRequest yielding;
  private PendingRequest head;
  private PendingRequest tail;
  private int size;
  /** Per key: {rows, requests}; a key leaves the map with its last request. */
  private final Map<BatchKey, long[]> rowsByKey = new HashMap<>();

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  PendingRequest peek() {
    return head;
  }

  /** Rows queued of requests batchable with {@code key}, wherever they are in the queue. */
  long rowsFor(BatchKey key) {
    long[] rows = rowsByKey.get(key);
    return rows == null ? 0 : rows[0];
  }

  /** Requests queued that are batchable with {@code key}. */
  long countFor(BatchKey key) {
    long[] perKey = rowsByKey.get(key);
    return perKey == null ? 0 : perKey[1];
  }

  /** Queues {@code p}, which arrives at {@code nowNanos}, in its place by priority (see the class comment). */
  void add(PendingRequest p, long nowNanos) {
    if (p.low) {
      link(p, tail, null);
      if (yielding == null) {
        yielding = p;
      }
      return;
    }
    while (yielding != null && nowNanos - yielding.enqueuedNanos >= LOW_YIELD_NANOS) {
      yielding = yielding.next; // waited its share: it keeps its place from now on
    }
    if (yielding == null) {
      link(p, tail, null);
    } else {
      link(p, yielding.prev, yielding);
    }
  }

  /** {@link #add} at its own arrival time. */
  void addLast(PendingRequest p) {
    add(p, p.enqueuedNanos);
  }

  /** Puts {@code ps} in front of everything queued, keeping their order. */
  void addFirst(List<PendingRequest> ps) {
    for (int i = ps.size() - 1; i >= 0; i--) {
      link(ps.get(i), null, head);
    }
  }

  /** Unlinks {@code p}; does nothing if it is not queued. */
  void remove(PendingRequest p) {
    if (!p.linked) {
      return;
    }
    if (p == yielding) {
      yielding = p.next;
    }
    if (p.prev == null) {
      head = p.next;
    } else {
      p.prev.next = p.next;
    }
    if (p.next == null) {
      tail = p.prev;
    } else {
      p.next.prev = p.prev;
    }
    p.prev = null;
    p.next = null;
    p.linked = false;
    size--;
    long[] perKey = rowsByKey.get(p.key);
    perKey[0] -= p.rows;
    if (--perKey[1] == 0) {
      rowsByKey.remove(p.key);
    }
  }

  private void link(PendingRequest p, PendingRequest before, PendingRequest after) {
    if (p.linked) {
      throw new IllegalStateException("request already queued");
    }
    p.prev = before;
    p.next = after;
    if (before == null) {
      head = p;
    } else {
      before.next = p;
    }
    if (after == null) {
      tail = p;
    } else {
      after.prev = p;
    }
    p.linked = true;
    size++;
    long[] perKey = rowsByKey.computeIfAbsent(p.key, k -> new long[2]);
    perKey[0] += p.rows;
    perKey[1]++;
  }
}
