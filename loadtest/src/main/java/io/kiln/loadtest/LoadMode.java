package io.kiln.loadtest;

import java.util.Locale;

/** How requests are issued. */
public enum LoadMode {
  /**
   * Constant arrival rate: request {@code i} is due at {@code start + i/R} whether or not earlier ones
   * finished, and its latency is measured from that intended time, so a stalled server or a saturated
   * connection pool shows up as latency (no coordinated omission).
   */
  OPEN,
  /**
   * A fixed number of connections, each with exactly one request in flight; latency is measured from the
   * actual send. This is the "naive" benchmark: it slows down with the server and hides stalls.
   */
  CLOSED;

  /** Parses {@code open} or {@code closed}. */
  public static LoadMode parse(String name) {
    try {
      return valueOf(name.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("unknown mode '" + name + "'; expected open or closed", e);
    }
  }
}
