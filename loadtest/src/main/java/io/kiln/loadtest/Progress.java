package io.kiln.loadtest;

/**
 * A once-a-second snapshot of a running load test.
 *
 * @param phase     {@code warmup} or {@code measure}
 * @param elapsed   seconds since the start of the phase
 * @param rps       requests that ended in the last interval, per second
 * @param p50Ms     median latency of the phase so far
 * @param p99Ms     99th percentile of the phase so far
 * @param requests  requests of the phase ended so far
 * @param errors    non-success outcomes of the phase so far
 * @param inFlight  requests outstanding now
 */
public record Progress(String phase, double elapsed, double rps, double p50Ms, double p99Ms, long requests,
    long errors, int inFlight) {

  /** One human-readable line. */
  public String line() {
    return String.format(java.util.Locale.ROOT, "[%-7s %5.1fs] %10.1f req/s  p50 %9.3f ms  p99 %9.3f ms  requests %d  errors %d  in-flight %d",
        phase, elapsed, rps, p50Ms, p99Ms, requests, errors, inFlight);
  }
}
