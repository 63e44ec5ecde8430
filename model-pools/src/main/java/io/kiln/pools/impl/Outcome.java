package io.kiln.pools.impl;

/** How a request left the pool; the {@code outcome} tag of {@code kiln.pool.requests}. */
enum Outcome {
  /** Answered with outputs. */
  OK("ok"),
  /** Refused at submit: queue full, draining or closed. */
  REJECTED("rejected"),
  /** Answered DEADLINE_EXCEEDED. */
  EXPIRED("expired"),
  /** Its worker failed and no requeue was left, or the pool closed under it. */
  FAILED("failed"),
  /** Its client cancelled it. */
  CANCELLED("cancelled"),
  /** INVALID_INPUT, from the pool or a worker. */
  INVALID("invalid");

  final String tag;

  Outcome(String tag) {
    this.tag = tag;
  }
}
