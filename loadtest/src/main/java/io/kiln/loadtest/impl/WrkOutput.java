package io.kiln.loadtest.impl;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one {@code wrk --latency} run printed: requests, seconds, {@code Requests/sec}, the latency distribution
 * (50/75/90/99 %) in milliseconds, non-2xx/3xx responses and socket errors. Read from wrk 4's text output.
 *
 * @param latencyMs percentile (50, 75, 90, 99) to milliseconds, as wrk printed them
 * @param non2xx    responses with a status other than 2xx/3xx (wrk still counts them in Requests/sec)
 * @param socketErrors connect + read + write + timeout errors
 */
public record WrkOutput(long requests, double seconds, double requestsPerSecond, Map<Integer, Double> latencyMs,
                        long non2xx, long socketErrors) {
  private static final Pattern TOTAL = Pattern.compile("(?m)^\\s*(\\d+) requests in ([0-9.]+)(us|ms|s|m|h),");
  private static final Pattern RPS = Pattern.compile("(?m)^Requests/sec:\\s*([0-9.]+)");
  private static final Pattern PERCENTILE = Pattern.compile("(?m)^\\s*(50|75|90|99)%\\s+([0-9.]+)(us|ms|s|m|h)\\s*$");
  private static final Pattern NON_2XX = Pattern.compile("(?m)^\\s*Non-2xx or 3xx responses:\\s*(\\d+)");
  private static final Pattern SOCKET = Pattern.compile(
      "(?m)^\\s*Socket errors: connect (\\d+), read (\\d+), write (\\d+), timeout (\\d+)");

  public WrkOutput {
    latencyMs = Map.copyOf(latencyMs);
  }

  /**
   * @throws IllegalArgumentException if the text has no {@code Requests/sec} or total line, or lacks the
   *                                  latency distribution (run wrk with {@code --latency})
   */
  public static WrkOutput parse(String text) {
    Matcher rps = RPS.matcher(text);
    Matcher total = TOTAL.matcher(text);
    if (!rps.find() || !total.find()) {
      String first = text.isBlank() ? "(empty)" : text.strip().lines().findFirst().orElse("");
      throw new IllegalArgumentException("not the output of a completed wrk run (no 'Requests/sec:' or "
          + "'N requests in' line); it begins: " + first);
    }
    Map<Integer, Double> latency = new LinkedHashMap<>();
    Matcher p = PERCENTILE.matcher(text);
    while (p.find()) {
      latency.put(Integer.parseInt(p.group(1)), millis(Double.parseDouble(p.group(2)), p.group(3)));
    }
    if (!latency.keySet().containsAll(java.util.List.of(50, 99))) {
      throw new IllegalArgumentException("wrk output has no latency distribution; run wrk with --latency");
    }
    Matcher non2xx = NON_2XX.matcher(text);
    Matcher socket = SOCKET.matcher(text);
    long socketErrors = 0;
    if (socket.find()) {
      for (int g = 1; g <= 4; g++) {
        socketErrors += Long.parseLong(socket.group(g));
      }
    }
    return new WrkOutput(Long.parseLong(total.group(1)), millis(Double.parseDouble(total.group(2)), total.group(3)) / 1000,
        Double.parseDouble(rps.group(1)), latency, non2xx.find() ? Long.parseLong(non2xx.group(1)) : 0, socketErrors);
  }

  /** The latency at a percentile wrk printed (50, 75, 90, 99), in milliseconds. */
  public double p(int percentile) {
    Double v = latencyMs.get(percentile);
    if (v == null) {
      throw new IllegalArgumentException("wrk printed no " + percentile + "% latency");
    }
    return v;
  }

  /** Requests that were not answered with 2xx/3xx, or failed on the socket. */
  public long errors() {
    return non2xx + socketErrors;
  }

  private static double millis(double value, String unit) {
    return ToolTimes.millis(value, unit);
  }
}
