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

  /** An {@code A/B round} line of {@code PoolBenchmark}: the round's best batched direct and pool slices. */
  public record AbRound(int round, double directPerSecond, int directBatch, double poolPerSecond, int poolBatch) {
    public double ratio() {
      return poolPerSecond / directPerSecond;
    }
  }

  /** The spread of the A/B rounds' ratios (pool over direct), computed here from the round lines. */
  public record AbSummary(int rounds, double median, double mean, double min, double max, double sd) {
  }

  private static final Pattern AB = Pattern.compile("^A/B round (\\d+): direct ([\\d.]+) images/s \\(batch (\\d+)\\), "
      + "pool ([\\d.]+) images/s \\(max_batch_size (\\d+)\\).*$");
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

  /**
   * The result lines of each run of a printout that holds several ({@code bench-runtime.sh} runs the benchmark in a
   * fresh JVM per round and heads each with a {@code ## run N} line); a printout without such lines is one run.
   */
  public static List<List<CallLine>> callRuns(List<String> output) {
    List<List<CallLine>> runs = new ArrayList<>();
    List<String> current = new ArrayList<>();
    boolean marked = false;
    for (String line : output) {
      if (line.startsWith("## run ")) {
        if (marked || !calls(current).isEmpty()) {
          runs.add(calls(current));
        }
        current = new ArrayList<>();
        marked = true;
        continue;
      }
      current.add(line);
    }
    List<CallLine> last = calls(current);
    if (marked || !last.isEmpty()) {
      runs.add(last);
    }
    return runs;
  }

  /**
   * The tables of the A/B rounds ({@code ## round N}, not the survey rounds) of a {@code PoolBenchmark} printout, in
   * order; a printout with none gives its last table as one round.
   */
  public static List<List<PoolLine>> poolRounds(List<String> output) {
    List<List<PoolLine>> rounds = new ArrayList<>();
    List<PoolLine> current = null;
    for (String line : output) {
      if (line.startsWith("## ")) {
        current = line.startsWith("## round ") ? new ArrayList<>() : null;
        if (current != null) {
          rounds.add(current);
        }
        continue;
      }
      Matcher m = POOL.matcher(line);
      if (current != null && m.matches()) {
        current.add(pool(m));
      }
    }
    rounds.removeIf(List::isEmpty);
    if (rounds.isEmpty()) {
      List<PoolLine> last = lastPoolRound(output);
      return last.isEmpty() ? List.of() : List.of(last);
    }
    return rounds;
  }

  private static PoolLine pool(Matcher m) {
    return new PoolLine(m.group(1).trim(), m.group(2).equals("-") ? 0 : Integer.parseInt(m.group(2)),
        Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)),
        Double.parseDouble(m.group(6)), Long.parseLong(m.group(7)));
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

  /** Every {@code A/B round} line of a {@code PoolBenchmark} printout, in order. */
  public static List<AbRound> abRounds(List<String> output) {
    List<AbRound> out = new ArrayList<>();
    for (String line : output) {
      Matcher m = AB.matcher(line.trim());
      if (m.matches()) {
        out.add(new AbRound(Integer.parseInt(m.group(1)), Double.parseDouble(m.group(2)), Integer.parseInt(m.group(3)),
            Double.parseDouble(m.group(4)), Integer.parseInt(m.group(5))));
      }
    }
    return out;
  }

  /** Median, mean, extremes and sample standard deviation of the rounds' ratios; empty rounds: none. */
  public static java.util.Optional<AbSummary> abSummary(List<AbRound> rounds) {
    if (rounds.isEmpty()) {
      return java.util.Optional.empty();
    }
    double[] r = rounds.stream().mapToDouble(AbRound::ratio).sorted().toArray();
    int n = r.length;
    double median = n % 2 == 1 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    double mean = java.util.Arrays.stream(r).average().orElseThrow();
    double var = n < 2 ? 0 : java.util.Arrays.stream(r).map(x -> (x - mean) * (x - mean)).sum() / (n - 1);
    return java.util.Optional.of(new AbSummary(n, median, mean, r[0], r[n - 1], Math.sqrt(var)));
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
