package io.kiln.loadtest.impl;

/** Issues the requests of one run. Started once, stopped once, by the run's control thread. */
public interface Driver {

  /** Starts issuing; returns at once. */
  void start();

  /** True once the driver will issue no more requests (duration over, request count reached, or stopped). */
  boolean issuingDone();

  /**
   * Stops issuing (waiting at most briefly for its own thread) and records requests that were due but
   * never sent as unfinished, their latency bounded below by {@code endNs}.
   */
  void stop(long endNs);

  /** Stops issuing, as {@link #stop}, but a request due and not sent yet is withdrawn, not counted: it never was. */
  void halt();
}
