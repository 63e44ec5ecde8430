package io.kiln.loadtest.impl;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one timed {@code h2load} run (nghttp2's HTTP/2 load generator, used here for gRPC unary calls) printed:
 * the measured seconds, requests per second, how many requests succeeded (HTTP 2xx) or failed, and the mean
 * request time. h2load prints no percentiles, only min / max / mean / sd.
 *
 * @param meanMs the mean "time for request", in milliseconds
 */
public record H2loadOutput(double seconds, double requestsPerSecond, long done, long succeeded, long failed,
                           long errored, long timeouts, long non2xx, double meanMs) {
  private static final Pattern FINISHED = Pattern.compile("(?m)^finished in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+) req/s");
  private static final Pattern REQUESTS = Pattern.compile(
      "(?m)^requests: (\\d+) total, (\\d+) started, (\\d+) done, (\\d+) succeeded, (\\d+) failed, (\\d+) errored, (\\d+) timeout");
  private static final Pattern CODES = Pattern.compile("(?m)^status codes: (\\d+) 2xx, (\\d+) 3xx, (\\d+) 4xx, (\\d+) 5xx");
  private static final Pattern REQUEST_TIME = Pattern.compile(
      "(?m)^time for request:\\s+([0-9.]+)(us|ms|s)\\s+([0-9.]+)(us|ms|s)\\s+([0-9.]+)(us|ms|s)");

  /**
   * @throws IllegalArgumentException if the text lacks the summary lines of a finished run, or no request was done
   */
  public static H2loadOutput parse(String text) {
    Matcher f = FINISHED.matcher(text);
    Matcher r = REQUESTS.matcher(text);
    Matcher c = CODES.matcher(text);
    Matcher t = REQUEST_TIME.matcher(text);
    if (!f.find() || !r.find() || !c.find() || !t.find()) {
      String first = text.isBlank() ? "(empty)" : text.strip().lines().findFirst().orElse("");
      throw new IllegalArgumentException("not the output of a finished h2load run (no 'finished in', 'requests:',"
          + " 'status codes:' or 'time for request:' line); it begins: " + first);
    }
    long done = Long.parseLong(r.group(3));
    if (done == 0) {
      throw new IllegalArgumentException("h2load did no request (is the server up?)");
    }
    long non2xx = Long.parseLong(c.group(2)) + Long.parseLong(c.group(3)) + Long.parseLong(c.group(4));
    return new H2loadOutput(millis(f.group(1), f.group(2)) / 1000, Double.parseDouble(f.group(3)), done,
        Long.parseLong(r.group(4)), Long.parseLong(r.group(5)), Long.parseLong(r.group(6)), Long.parseLong(r.group(7)),
        non2xx, millis(t.group(5), t.group(6)));
  }

  /** Requests that did not succeed with HTTP 2xx (a gRPC error with status 200 is not visible to h2load). */
  public long errors() {
    return failed + errored + timeouts + non2xx;
  }

  private static double millis(String value, String unit) {
    return ToolTimes.millis(Double.parseDouble(value), unit);
  }
}
