package io.kiln.pools.impl;

import java.util.List;

/** One worker and what it is doing. Owned by the dispatcher's thread. */
final class WorkerSlot {

  enum State { IDLE, BUSY, FAILED }

  final WorkerChannel channel;
  State state = State.IDLE;
  /** Taken out by removeWorker while busy: it finishes its batch and is then forgotten. */
  boolean removed;
  /** The batch it executes, while busy. */
  List<PendingRequest> batch;
  long dispatchedNanos;

  WorkerSlot(WorkerChannel channel) {
    this.channel = channel;
  }

  String id() {
    return channel.id();
  }
}
