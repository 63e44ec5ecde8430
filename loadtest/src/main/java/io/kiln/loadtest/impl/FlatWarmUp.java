package io.kiln.loadtest.impl;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.IntToDoubleFunction;

/**
 * Warm-up until throughput is flat: rounds are run until two consecutive ones differ by less than a given
 * percentage of the earlier, or a maximum number of rounds has run. The same rule as {@code run.sh}'s
 * {@code warm_until_flat}. Stateless.
 */
public final class FlatWarmUp {

  /** Each round's throughput (req/s), in order, and whether the last two were within the limit. */
  public record Result(List<Double> rounds, boolean flat) {
    public Result {
      rounds = List.copyOf(rounds);
    }

    /** The {@code TARGET.warm.txt} text: {@code round N RPS} lines, then {@code flat yes|no}. */
    public String record() {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < rounds.size(); i++) {
        sb.append(String.format(Locale.ROOT, "round %d %.1f%n", i + 1, rounds.get(i)));
      }
      return sb.append("flat ").append(flat ? "yes" : "no").append('\n').toString();
    }
  }

  private FlatWarmUp() {
  }

  /** Whether {@code current} is within {@code percent} % of {@code previous} (never, if previous is not positive). */
  public static boolean flat(double previous, double current, double percent) {
    return previous > 0 && Math.abs(current - previous) / previous * 100 < percent;
  }

  /**
   * Runs {@code round} (given the round number, from 1; returns its req/s) until flat or {@code maxRounds}.
   *
   * @throws IllegalArgumentException if maxRounds < 2 or percent <= 0
   */
  public static Result run(int maxRounds, double percent, IntToDoubleFunction round) {
    if (maxRounds < 2) {
      throw new IllegalArgumentException("at least 2 rounds are needed to tell flat, got " + maxRounds);
    }
    if (!(percent > 0)) {
      throw new IllegalArgumentException("the flat limit must be a positive percentage, got " + percent);
    }
    List<Double> rounds = new ArrayList<>();
    for (int i = 1; i <= maxRounds; i++) {
      double rps = round.applyAsDouble(i);
      rounds.add(rps);
      if (i > 1 && flat(rounds.get(i - 2), rps, percent)) {
        return new Result(rounds, true);
      }
    }
    return new Result(rounds, false);
  }
}
