package io.kiln.runtime.impl;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Writes this node's row to the node table at most once per interval, whatever the rate of changes: every
 * member listens to every row, so a node's write rate is what every other node receives from it. A change
 * after a quiet interval is written at once; changes within the interval are coalesced into one trailing
 * write of the state at its end; a row equal to the last one written (apart from its version: a task that
 * reserved and released in between) is not written again. One write is in flight at a time, so the map
 * never ends on an older row than the last one written. Ray's raylets report resources every 100 ms the
 * same way.
 *
 * <p>Thread-safe; {@link #changed} never blocks beyond a short monitor and may be called from any thread.
 */
final class RowPublisher {

  /** How long to wait before running a task; Vert.x's timers in the node, a simulated clock in tests. */
  @FunctionalInterface
  interface Timer {
    void after(long delayMillis, Runnable task);
  }

  private final long intervalNanos;
  private final LongSupplier nanoClock;
  private final Timer timer;
  private final Supplier<NodeRecord> row;
  private final Function<NodeRecord, CompletionStage<Void>> write;

  // Guarded by this.
  private boolean dirty;
  private boolean inFlight;
  private boolean timerSet;
  private boolean closed;
  private boolean everWritten;
  private long lastWriteNanos;
  private NodeRecord lastWritten;
  private CompletableFuture<Void> drained;

  /**
   * @param row builds the node's current row (with a new version) when a write is due
   * @param write writes one row; completes when the table has it (a failure only ends that write)
   */
  RowPublisher(long intervalMillis, LongSupplier nanoClock, Timer timer, Supplier<NodeRecord> row,
               Function<NodeRecord, CompletionStage<Void>> write) {
    this.intervalNanos = intervalMillis * 1_000_000;
    this.nanoClock = nanoClock;
    this.timer = timer;
    this.row = row;
    this.write = write;
  }

  /** The row may have changed: it will be written, now or at the end of the current interval. */
  synchronized void changed() {
    if (closed) {
      return;
    }
    dirty = true;
    writeIfDue();
  }

  /** No more writes; completes once a write in flight (if any) has finished. */
  synchronized CompletionStage<Void> close() {
    closed = true;
    if (!inFlight) {
      return CompletableFuture.completedFuture(null);
    }
    if (drained == null) {
      drained = new CompletableFuture<>();
    }
    return drained;
  }

  private void writeIfDue() {
    if (!dirty || inFlight || timerSet || closed) {
      return;
    }
    long now = nanoClock.getAsLong();
    long wait = everWritten ? lastWriteNanos + intervalNanos - now : 0;
    if (wait > 0) {
      timerSet = true;
      timer.after((wait + 999_999) / 1_000_000, this::timerFired);
      return;
    }
    dirty = false;
    NodeRecord rec = row.get();
    if (lastWritten != null && sameButVersion(rec, lastWritten)) {
      return;
    }
    inFlight = true;
    everWritten = true;
    lastWriteNanos = now;
    lastWritten = rec;
    CompletionStage<Void> done;
    try {
      done = write.apply(rec);
    } catch (RuntimeException e) {
      done = CompletableFuture.failedFuture(e); // e.g. the cluster is gone: that write is over
    }
    done.whenComplete((v, e) -> written(e));
  }

  private synchronized void timerFired() {
    timerSet = false;
    writeIfDue();
  }

  private synchronized void written(Throwable failure) {
    inFlight = false;
    if (failure != null) {
      // The table may not hold this row: forget it, so the same state is written again rather than skipped.
      lastWritten = null;
      dirty = true;
    }
    if (closed) {
      if (drained != null) {
        drained.complete(null);
      }
      return;
    }
    writeIfDue();
  }

  private static boolean sameButVersion(NodeRecord a, NodeRecord b) {
    return Objects.equals(a.nodeId(), b.nodeId()) && Objects.equals(a.host(), b.host())
        && Objects.equals(a.total(), b.total()) && Objects.equals(a.available(), b.available())
        && Objects.equals(a.labels(), b.labels()) && Objects.equals(a.services(), b.services())
        && a.startedAtMillis() == b.startedAtMillis();
  }
}
