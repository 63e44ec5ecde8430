package io.kiln.loadtest.impl;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The rules every verdict of {@code loadtest/RESULTS.md} follows, in one place. A check (a ratio of Kiln to a limit,
 * or an absolute figure such as a p99) is measured once per <em>round</em>; a verdict needs at least
 * {@link #MIN_ROUNDS} rounds, and for a ratio the limit must have been measured again in every round, alternating
 * with Kiln (interleaved), never once at the start. Then, over the rounds' values:
 * <ul>
 *   <li>{@link Status#MET}: every round meets the target, so the median does too;</li>
 *   <li>{@link Status#MISSED}: no round meets it;</li>
 *   <li>{@link Status#UNSTABLE}: the range straddles the target (some rounds meet it, some do not), whatever the
 *       median says;</li>
 *   <li>{@link Status#INSUFFICIENT_ROUNDS}: fewer than {@link #MIN_ROUNDS} rounds, or rounds that were not
 *       interleaved: no verdict, though the median and range of what was measured are still reported;</li>
 *   <li>{@link Status#NOT_JUDGED}: a round's inputs had errors or answered nothing;</li>
 *   <li>{@link Status#NOT_MEASURED}: no round measured it.</li>
 * </ul>
 * Stateless.
 */
public final class RoundVerdict {

  /** The fewest rounds a verdict may come from. */
  public static final int MIN_ROUNDS = 3;

  /** How a value must relate to the target. */
  public enum Direction {
    AT_LEAST("≥"), AT_MOST("≤"), ABOVE(">"), BELOW("<");

    private final String symbol;

    Direction(String symbol) {
      this.symbol = symbol;
    }

    public String symbol() {
      return symbol;
    }

    boolean meets(double value, double target) {
      return switch (this) {
        case AT_LEAST -> value >= target;
        case AT_MOST -> value <= target;
        case ABOVE -> value > target;
        case BELOW -> value < target;
      };
    }
  }

  /** The outcome of a check. */
  public enum Status { MET, MISSED, UNSTABLE, INSUFFICIENT_ROUNDS, NOT_JUDGED, NOT_MEASURED }

  /** How a value is written: a ratio as a percentage or a factor, a latency, a rate. */
  public enum Unit {
    PERCENT, TIMES, MS, US, PER_SECOND;

    /** The value as the target is stated, e.g. {@code 64 %}, {@code 1.09×}, {@code 1.760 ms}. */
    public String format(double v) {
      return switch (this) {
        case PERCENT -> String.format(Locale.ROOT, "%.0f %%", v * 100);
        case TIMES -> String.format(Locale.ROOT, "%.2f×", v);
        case MS -> String.format(Locale.ROOT, "%.3f ms", v);
        case US -> String.format(Locale.ROOT, "%.1f µs", v);
        case PER_SECOND -> String.format(Locale.ROOT, "%,.0f/s", v);
      };
    }

    /** A range of values, e.g. {@code 62–66 %}, {@code 1.05–1.12×}. */
    String range(double min, double max) {
      return switch (this) {
        case PERCENT -> String.format(Locale.ROOT, "%.0f–%.0f %%", min * 100, max * 100);
        case TIMES -> String.format(Locale.ROOT, "%.2f–%.2f×", min, max);
        case MS -> String.format(Locale.ROOT, "%.3f–%.3f ms", min, max);
        case US -> String.format(Locale.ROOT, "%.1f–%.1f µs", min, max);
        case PER_SECOND -> String.format(Locale.ROOT, "%,.0f–%,.0f/s", min, max);
      };
    }

    /** How far a value is from the target, never rounded to zero: {@code 6 points}, {@code 0.4 points}. */
    String distance(double d) {
      d = Math.abs(d);
      return switch (this) {
        case PERCENT -> d * 100 >= 1 ? String.format(Locale.ROOT, "%.0f points", d * 100)
            : String.format(Locale.ROOT, "%.2f points", d * 100);
        case TIMES -> d >= 0.01 ? String.format(Locale.ROOT, "%.2f×", d) : String.format(Locale.ROOT, "%.4f×", d);
        case MS -> String.format(Locale.ROOT, "%.3f ms", d);
        case US -> String.format(Locale.ROOT, "%.1f µs", d);
        case PER_SECOND -> String.format(Locale.ROOT, "%,.0f/s", d);
      };
    }
  }

  /**
   * A check's target: e.g. {@code ≥ 70 %} is {@code new Target(AT_LEAST, 0.7, PERCENT)}.
   */
  public record Target(Direction direction, double value, Unit unit) {
    @Override
    public String toString() {
      return direction.symbol() + " " + unit.format(value);
    }
  }

  /**
   * One round of a check: its value, or why the round cannot be used ({@code problem}, e.g. {@code identity-json-c1
   * had 12 errors}); {@code label} names the round, e.g. {@code r2}.
   */
  public record Round(String label, double value, String problem) {
    public static Round of(String label, double value) {
      return new Round(label, value, null);
    }

    public static Round failed(String label, String problem) {
      return new Round(label, Double.NaN, problem);
    }
  }

  /**
   * A judged check.
   *
   * @param status   the outcome
   * @param target   what it was judged against
   * @param values   the usable rounds' values, in round order
   * @param median   their median (NaN when there are none)
   * @param min      the smallest (NaN when there are none)
   * @param max      the largest (NaN when there are none)
   * @param reason   for {@link Status#NOT_JUDGED}, {@link Status#NOT_MEASURED} and
   *                 {@link Status#INSUFFICIENT_ROUNDS}: why; otherwise empty
   */
  public record Judgement(Status status, Target target, List<Double> values, double median, double min, double max,
      String reason) {

    public int rounds() {
      return values.size();
    }

    /** The figure: {@code median 64 % (62–66 %, 3 rounds)}, {@code 64 % (1 round)}, or {@code –}. */
    public String measured() {
      Unit u = target.unit();
      if (values.isEmpty()) {
        return "–";
      }
      if (values.size() == 1) {
        return u.format(median) + " (1 round)";
      }
      return "median " + u.format(median) + " (" + u.range(min, max) + ", " + values.size() + " rounds)";
    }

    /**
     * The verdict in words: {@code met}, {@code missed by 6 points}, {@code unstable: …}, {@code insufficient rounds
     * (1 of 3)}, {@code not judged: …}, {@code not measured (…)}.
     */
    public String verdict() {
      Unit u = target.unit();
      return switch (status) {
        case MET -> "met";
        case MISSED -> "missed by " + u.distance(median - target.value()) + " (median)";
        case UNSTABLE -> "unstable: the range " + u.range(min, max) + " straddles " + target + " (median "
            + (target.direction().meets(median, target.value()) ? "meets it" : "misses it") + ")";
        case INSUFFICIENT_ROUNDS -> "insufficient rounds (" + reason + ")";
        case NOT_JUDGED -> "not judged: " + reason;
        case NOT_MEASURED -> "not measured" + (reason.isEmpty() ? "" : " (" + reason + ")");
      };
    }

    /** The verdict for a markdown table: a miss in bold, {@code MISSED}, {@code UNSTABLE} in capitals. */
    public String markdown() {
      return switch (status) {
        case MET -> "met";
        case MISSED -> "**MISSED** " + verdict().substring("missed ".length());
        case UNSTABLE -> "**UNSTABLE**: " + verdict().substring("unstable: ".length());
        default -> verdict();
      };
    }
  }

  private RoundVerdict() {
  }

  /** A check with no round at all. */
  public static Judgement notMeasured(Target target, String what) {
    return new Judgement(Status.NOT_MEASURED, target, List.of(), Double.NaN, Double.NaN, Double.NaN,
        what == null ? "" : what);
  }

  /**
   * Judges a check from its rounds.
   *
   * @param rounds      every round in which the check was measured, in order
   * @param target      the target (or floor)
   * @param interleaved whether the limit was measured again in every round, alternating with Kiln (for an absolute
   *                    figure, with no limit, pass {@code true}); when {@code false}, no verdict
   * @param why         when not interleaved: why, e.g. {@code the limit was measured once}; may be null
   */
  public static Judgement judge(List<Round> rounds, Target target, boolean interleaved, String why) {
    if (rounds.isEmpty()) {
      return notMeasured(target, null);
    }
    List<String> problems = new ArrayList<>();
    List<Double> values = new ArrayList<>();
    for (Round r : rounds) {
      if (r.problem() != null) {
        problems.add(rounds.size() > 1 ? r.label() + ": " + r.problem() : r.problem());
      } else if (!Double.isFinite(r.value())) {
        problems.add((rounds.size() > 1 ? r.label() + ": " : "") + "no finite value");
      } else {
        values.add(r.value());
      }
    }
    double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    int n = sorted.length;
    double median = n == 0 ? Double.NaN : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    double min = n == 0 ? Double.NaN : sorted[0];
    double max = n == 0 ? Double.NaN : sorted[n - 1];
    List<Double> kept = List.copyOf(values);
    if (!problems.isEmpty()) {
      return new Judgement(Status.NOT_JUDGED, target, kept, median, min, max, String.join("; ", problems));
    }
    if (n < MIN_ROUNDS) {
      return new Judgement(Status.INSUFFICIENT_ROUNDS, target, kept, median, min, max,
          n + " of " + MIN_ROUNDS + (interleaved ? "" : "; " + (why == null ? "not interleaved" : why)));
    }
    if (!interleaved) {
      return new Judgement(Status.INSUFFICIENT_ROUNDS, target, kept, median, min, max,
          n + " rounds, not interleaved" + (why == null ? "" : ": " + why));
    }
    long meeting = values.stream().filter(v -> target.direction().meets(v, target.value())).count();
    Status s = meeting == n ? Status.MET : meeting == 0 ? Status.MISSED : Status.UNSTABLE;
    return new Judgement(s, target, kept, median, min, max, "");
  }

  /**
   * Whether a ratio's rounds alternated: every round's pair (Kiln's and the limit's start times) lies wholly after
   * the previous round's pair, so the limit was measured again each round rather than once. Pairs are given in
   * round order; a missing time ({@code NaN}) means the order was not recorded: not interleaved.
   *
   * @param runStarts  when each round's measured run started (epoch seconds)
   * @param baseStarts when each round's limit (or baseline) run started
   */
  public static boolean interleaved(List<Double> runStarts, List<Double> baseStarts) {
    if (runStarts.size() != baseStarts.size()) {
      return false;
    }
    double previousEnd = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < runStarts.size(); i++) {
      double a = runStarts.get(i);
      double b = baseStarts.get(i);
      if (!Double.isFinite(a) || !Double.isFinite(b)) {
        return false;
      }
      if (Math.min(a, b) <= previousEnd) {
        return false;
      }
      previousEnd = Math.max(a, b);
    }
    return true;
  }
}
