package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.StreamTarget;
import io.kiln.pools.Tensor;
import java.util.List;

/**
 * The worker's end of one stream: sends its chunks to the receiving node within the credit it was granted, and
 * tells the worker whether it may produce the next one. Credit and cancel arrive on the hub's thread; the worker
 * thread reads them; both under {@code monitor}, which the hub notifies so that a worker waiting for any of its
 * streams wakes up.
 */
final class StreamSender {

  private final StreamHub hub;
  private final StreamTarget target;
  private final Object monitor;
  private final long deadlineNanos;
  private final String address;
  private int credits;
  private boolean cancelled;
  private long seq;
  private boolean closed;

  StreamSender(StreamHub hub, StreamTarget target, Object monitor, long deadlineNanos) {
    this.hub = hub;
    this.target = target;
    this.monitor = monitor;
    this.deadlineNanos = deadlineNanos;
    this.address = StreamHub.IN + target.replyNode();
    this.credits = target.window();
  }

  long deadlineNanos() {
    return deadlineNanos;
  }

  long sent() {
    return seq;
  }

  /** Whether the next chunk may be produced: credit left and not cancelled. Call under the monitor or not. */
  boolean mayProduce() {
    synchronized (monitor) {
      return credits > 0 && !cancelled;
    }
  }

  boolean cancelled() {
    synchronized (monitor) {
      return cancelled;
    }
  }

  /** Whether it needs the worker's attention now (may produce, or was cancelled); call under the monitor. */
  boolean actionable() {
    return cancelled || credits > 0;
  }

  void credit(int n) {
    synchronized (monitor) {
      credits += Math.max(0, n);
      monitor.notifyAll();
    }
  }

  void cancel() {
    synchronized (monitor) {
      cancelled = true;
      monitor.notifyAll();
    }
  }

  /**
   * Sends the next chunk, spending one credit.
   *
   * @throws InferenceException TOO_LARGE when it holds more bytes than the target allows (nothing is sent)
   */
  void chunk(List<Tensor> outputs) {
    long bytes = 0;
    for (Tensor t : outputs) {
      bytes += t.data().length;
    }
    if (bytes > target.maxChunkBytes()) {
      throw new InferenceException(InferenceException.Kind.TOO_LARGE, "chunk " + seq + " holds " + bytes
          + " bytes, over the limit of " + target.maxChunkBytes() + " bytes per chunk");
    }
    synchronized (monitor) {
      credits--;
    }
    hub.send(address, StreamMessage.chunk(target.streamId(), seq++, outputs));
  }

  /** The answer is complete; forgets the stream. */
  void end() {
    if (!closed) {
      hub.send(address, StreamMessage.end(target.streamId(), seq));
      close();
    }
  }

  /** The stream failed; forgets it. */
  void fail(InferenceException e) {
    if (!closed) {
      hub.send(address, StreamMessage.error(target.streamId(), seq, e));
      close();
    }
  }

  /** Forgets the stream without a word (it was cancelled: the receiver listens no more). */
  void close() {
    closed = true;
    hub.removeOutbound(target.streamId());
  }
}
