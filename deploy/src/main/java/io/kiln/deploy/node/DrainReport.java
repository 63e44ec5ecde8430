package io.kiln.deploy.node;

import java.time.Duration;

/**
 * How a node's drain ended ({@link ServingNode#drain}).
 *
 * @param ran false when no drain ran ({@link DrainOptions#NONE})
 * @param drained whether the node went idle within the grace
 * @param took how long the drain lasted
 * @param inFlight inference requests its gateway still had unanswered at the end
 * @param queued requests still queued in its pools at the end
 * @param running requests its pools' workers still executed at the end
 * @param cutShort whether a second stop signal ended it early
 */
public record DrainReport(boolean ran, boolean drained, Duration took, int inFlight, int queued, int running,
                          boolean cutShort) {

  static DrainReport none() {
    return new DrainReport(false, true, Duration.ZERO, 0, 0, 0, false);
  }

  /** One line for the log, e.g. "drained in 1.2 s" or "grace over after 25.0 s: 2 in flight, 0 queued, 1 running". */
  public String describe() {
    if (!ran) {
      return "no drain";
    }
    String secs = String.format(java.util.Locale.ROOT, "%.1f s", took.toMillis() / 1000.0);
    if (drained) {
      return "drained in " + secs;
    }
    return (cutShort ? "drain cut short after " : "grace over after ") + secs + ": " + inFlight
        + " request(s) still in flight at the gateway, " + queued + " queued and " + running + " running in its pools";
  }
}
