package io.kiln.pools.impl;

import java.util.ArrayList;
import java.util.List;

/**
 * The batching policy: when the request at the head of the queue should go, and which queued requests go
 * with it. A batch is the head plus the following requests that share its {@link BatchKey}, in FIFO
 * order, up to {@code maxBatchSize} rows; requests of other shapes keep their places for later batches.
 * Filling stops at the first compatible request that would overflow the batch rather than skipping it,
 * so that small requests cannot starve a large one behind them.
 *
 * <p>A request that was re-queued after its worker failed goes alone, at once: inference is idempotent,
 * but a batch-mate may have been what broke the worker (a poison input), and batched again it would take
 * everyone down a second time, spending their last re-queue. Alone, only the culprit fails. Not thread-safe.
 */
final class BatchFormer {

  private final long maxRows;
  private final long delayNanos;

  BatchFormer(int maxBatchSize, long delayNanos) {
    this.maxRows = maxBatchSize;
    this.delayNanos = delayNanos;
  }

  /**
   * The first live request, after unlinking dead ones (answered, cancelled by their client, or past their
   * deadline) from the front into {@code dead}; null if none is left.
   */
  PendingRequest liveHead(RequestQueue queue, long nowNanos, List<PendingRequest> dead) {
    PendingRequest head = queue.peek();
    while (head != null && head.isDead(nowNanos)) {
      queue.remove(head);
      dead.add(head);
      head = queue.peek();
    }
    return head;
  }

  /**
   * Whether the batch headed by {@code head} should go now: enough compatible rows are queued to fill
   * it, there is no delay, the caller will not wait (draining), the head batches with no other
   * ({@link BatchKey#alone()}: waiting would not fill it), or the head has waited the full delay.
   */
  boolean isReady(RequestQueue queue, PendingRequest head, long nowNanos, boolean noWait) {
    return noWait || delayNanos == 0 || head.requeues > 0 || head.key.alone() || queue.rowsFor(head.key) >= maxRows
        || nowNanos - dueAt(head) >= 0;
  }

  /**
   * Whether a batch that is ready but would not be full should wait for a worker to free up: when
   * {@code busyWorkers} batches already run and that is as many as can run at once ({@code parallelism}, e.g. the
   * cores a CPU pool's workers share), a second partial batch would only share a core with the first, paying the
   * model's per-call cost twice for the same rows; queued meanwhile, the rows go as one batch when a worker frees,
   * or at once when they fill one. A request that batches with no other never holds: nothing could fill it. The
   * wait is bounded by {@code holdNanos} from the head's arrival (a batch's
   * recent compute time: about when a busy worker frees), so a hung worker costs the others at most that; with no
   * batch measured yet ({@code holdNanos} 0) nothing holds. Re-queued requests and a draining pool never hold.
   */
  boolean holdsPartial(RequestQueue queue, PendingRequest head, int busyWorkers, int parallelism, long holdNanos,
                       long nowNanos, boolean noWait) {
    return busyWorkers >= parallelism && !noWait && head.requeues == 0 && !head.key.alone() && holdNanos > 0
        && nowNanos - (head.enqueuedNanos + holdNanos) < 0 && queue.rowsFor(head.key) < maxRows;
  }

  /** When the batch headed by {@code head} goes if it does not fill up first. */
  long dueAt(PendingRequest head) {
    return head.enqueuedNanos + delayNanos;
  }

  /**
   * Unlinks and returns the batch headed by the live {@code head}; dead requests met on the way are
   * unlinked into {@code dead}. The batch holds at least the head, even if it alone exceeds the maximum;
   * re-queued requests are never batched with others (see the class comment).
   */
  List<PendingRequest> take(RequestQueue queue, PendingRequest head, long nowNanos, List<PendingRequest> dead) {
    if (head.requeues > 0) {
      queue.remove(head);
      return List.of(head);
    }
    List<PendingRequest> batch = new ArrayList<>();
    long rows = 0;
    // Stop scanning once every queued request of this shape was seen: others may fill a long queue.
    long unseen = queue.countFor(head.key);
    PendingRequest p = head;
    while (p != null && unseen > 0 && rows < maxRows) {
      PendingRequest next = p.next;
      if (p.key.equals(head.key)) {
        unseen--;
        if (p.isDead(nowNanos)) {
          queue.remove(p);
          dead.add(p);
        } else if (p.requeues == 0) { // re-queued ones go alone, later
          if (!batch.isEmpty() && rows + p.rows > maxRows) {
            break;
          }
          queue.remove(p);
          batch.add(p);
          rows += p.rows;
        }
      }
      p = next;
    }
    return batch;
  }
}
