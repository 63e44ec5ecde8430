package io.kiln.loadtest.impl;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the tables that the benchmark mains print ({@code ActorCallBenchmark}, {@code PoolBenchmark}), so
 * that RESULTS.md can quote them and judge the floors. Stateless.
 */
public final class BenchOutput {

  /** A line of {@code ActorCallBenchmark}: latencies in microseconds. */
  public record CallLine(String name, double p50Us, double p99Us, double p999Us, double perSecond) {
  }

  /** A line of {@code PoolBenchmark}'s round table; {@code concurrency} 0 for direct calls. */
  public record PoolLine(String scenario, int concurrency, double imagesPerSecond, double p50Ms, double p99Ms,
      double meanBatch, long errors) {
  }

  private static final Pattern CALL = Pattern.compile(
      "^(.+?)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s*$");
  private static final Pattern POOL = Pattern.compile(
      "^(.+?)\\s+(-|\\d+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+(\\d+)\\s*$");

  private BenchOutput() {
  }

  /** Every result line of an {@code ActorCallBenchmark} printout (headers and log lines are skipped). */
  public static List<CallLine> calls(List<String> output) {
    List<CallLine> out = new ArrayList<>();
    for (String line : output) {
      Matcher m = CALL.matcher(line);
      if (m.matches() && !line.contains(" WARN ") && !line.contains(" INFO ")) {
        out.add(new CallLine(m.group(1).trim(), Double.parseDouble(m.group(2)), Double.parseDouble(m.group(3)),
            Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5))));
      }
    }
    return out;
  }

  /** The lines of the last {@code ## round} of a {@code PoolBenchmark} printout. */
  public static List<PoolLine> lastPoolRound(List<String> output) {
    List<PoolLine> out = new ArrayList<>();
    for (String line : output) {
      if (line.startsWith("## round")) {
        out.clear();
        continue;
      }
      Matcher m = POOL.matcher(line);
      if (m.matches()) {
        out.add(new PoolLine(m.group(1).trim(), m.group(2).equals("-") ? 0 : Integer.parseInt(m.group(2)),
            Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)),
            Double.parseDouble(m.group(6)), Long.parseLong(m.group(7))));
      }
    }
    return out;
  }

  /**
   * The lines worth quoting: comments ({@code #}, {@code ## round}), table headers (they name {@code p50})
   * and result lines; log output and stack traces are left out.
   */
  public static List<String> quotable(List<String> output) {
    List<String> out = new ArrayList<>();
    for (String line : output) {
      boolean log = line.contains(" WARN ") || line.contains(" INFO ") || line.contains(" ERROR ")
          || line.startsWith(" ") || line.startsWith("\t") || line.startsWith("[");
      boolean keep = line.startsWith("#") || (!log && (line.contains(" p50 ") || CALL.matcher(line).matches()
          || POOL.matcher(line).matches()));
      if (keep) {
        if (line.startsWith("## ") && !out.isEmpty()) {
          out.add("");
        }
        out.add(line);
      }
    }
    return out;
  }
}
