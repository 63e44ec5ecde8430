package io.kiln.pools.impl;

import io.kiln.pools.StreamCall;
import io.kiln.pools.Tensor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One streaming worker's intake: streams its pool hands it wait here until the worker's step loop takes them in
 * at its next step (iteration-level batching: new streams join, finished ones leave). Whoever offers a stream
 * while no loop is pending or running must start one (an actor call on the worker); a loop ends only once nothing
 * is queued, atomically with that check, so no stream is ever left waiting without a loop. Also the worker's
 * heartbeat while it streams: the loop beats at every step and every wake-up, a hung model stops it.
 *
 * <p>Thread-safe: the pool manager's thread offers and aborts, the worker's thread drains; all under
 * {@link #monitor}, which is also the monitor the worker waits on for credit, so an offer wakes it.
 */
final class StreamJoins {

  /** A stream offered to the worker and the future that completes (with no outputs) when it is over. */
  record Joined(StreamCall call, CompletableFuture<List<Tensor>> done) {
  }

  final Object monitor = new Object();
  private final ArrayDeque<Joined> queue = new ArrayDeque<>();
  private final Set<Joined> inFlight = new HashSet<>();
  private boolean looping;
  /** Bumped by {@link #abort}: a loop of an earlier epoch (a killed incarnation's thread that came back) stops. */
  private long epoch;
  private volatile long beatNanos;

  /** Queues a stream; returns whether the caller must start a loop (none is pending or running). */
  boolean offer(Joined j) {
    synchronized (monitor) {
      queue.add(j);
      inFlight.add(j);
      monitor.notifyAll();
      if (looping) {
        return false;
      }
      looping = true;
      return true;
    }
  }

  /** The epoch a loop starting now belongs to. */
  long epoch() {
    synchronized (monitor) {
      return epoch;
    }
  }

  /** The streams queued since the last call, for the loop of {@code loopEpoch}; null once that loop is stale. */
  List<Joined> drain(long loopEpoch) {
    synchronized (monitor) {
      if (loopEpoch != epoch) {
        return null;
      }
      List<Joined> out = new ArrayList<>(queue);
      queue.clear();
      return out;
    }
  }

  /** Whether streams wait to be taken in; call under the monitor. */
  boolean hasQueued() {
    return !queue.isEmpty();
  }

  /** Ends the loop if nothing is queued (atomically): whether it ended. */
  boolean finishIfIdle() {
    synchronized (monitor) {
      if (!queue.isEmpty()) {
        return false;
      }
      looping = false;
      return true;
    }
  }

  /** A stream is over: its future completes and it leaves the books. */
  void done(Joined j) {
    synchronized (monitor) {
      inFlight.remove(j);
    }
    j.done().complete(List.of());
  }

  /** The loop failed or its worker is gone: every stream offered and not over fails with {@code cause}. */
  void abort(Throwable cause) {
    List<Joined> all;
    synchronized (monitor) {
      all = new ArrayList<>(inFlight);
      inFlight.clear();
      queue.clear();
      looping = false;
      epoch++;
    }
    all.forEach(j -> j.done().completeExceptionally(cause));
  }

  void beat(long nanos) {
    beatNanos = nanos;
  }

  long lastBeatNanos() {
    return beatNanos;
  }

  /** Whether a loop is pending or running. */
  boolean looping() {
    synchronized (monitor) {
      return looping;
    }
  }
}
