package io.kiln.loadtest;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Finds the highest open-loop arrival rate a target sustains with p99 latency under a target and
 * (almost) no errors: the rate doubles from {@code startRate} until a step fails, then bisects between
 * the best passing and the lowest failing rate until they are within {@code precision}, for at most
 * {@code maxSteps} runs. Each step is a full run of the base options (warm-up + duration) at that rate,
 * measured from intended send times, so an overloaded server fails by its growing queue. Blocks the
 * caller for the sum of the steps.
 */
public final class MaxThroughputSearch {

  /**
   * @param p99TargetMs   a step passes only if its p99 is at or below this
   * @param maxErrorRatio ... and its errors / requests at or below this
   * @param precision     stop when (lowest failing - best passing) / lowest failing is at or below this
   */
  public record Options(double p99TargetMs, double maxErrorRatio, double startRate, double maxRate, int maxSteps,
      double precision) {
    public static final double DEFAULT_MAX_ERROR_RATIO = 0.001;
    public static final double DEFAULT_START_RATE = 100;
    public static final double DEFAULT_MAX_RATE = 1_000_000;
    public static final int DEFAULT_MAX_STEPS = 12;
    public static final double DEFAULT_PRECISION = 0.05;

    public Options {
      if (!(p99TargetMs > 0)) {
        throw new IllegalArgumentException("p99TargetMs must be > 0");
      }
      if (!(maxErrorRatio >= 0 && maxErrorRatio < 1)) {
        throw new IllegalArgumentException("maxErrorRatio must be in [0, 1)");
      }
      if (!(startRate > 0) || !(maxRate >= startRate) || maxRate > 10_000_000) {
        throw new IllegalArgumentException("need 0 < startRate <= maxRate <= 1e7");
      }
      if (maxSteps < 1 || maxSteps > 100) {
        throw new IllegalArgumentException("maxSteps must be 1..100");
      }
      if (!(precision > 0 && precision < 1)) {
        throw new IllegalArgumentException("precision must be in (0, 1)");
      }
    }

    /** The defaults with the given p99 target. */
    public static Options of(double p99TargetMs) {
      return new Options(p99TargetMs, DEFAULT_MAX_ERROR_RATIO, DEFAULT_START_RATE, DEFAULT_MAX_RATE, DEFAULT_MAX_STEPS,
          DEFAULT_PRECISION);
    }
  }

  /** One run of the search and its verdict. */
  public record Step(int step, double rate, boolean passed, String reason, RunResult result) {
  }

  /**
   * @param bestRate the highest passing offered rate; 0 if none passed
   * @param best     the run at {@code bestRate}; null if none passed
   */
  public record Result(String name, Options options, double bestRate, RunResult best, List<Step> steps,
      String stoppedBecause) {
  }

  private final LoadRunner runner;

  public MaxThroughputSearch(LoadRunner runner) {
    this.runner = Objects.requireNonNull(runner, "runner");
  }

  /**
   * Runs the search.
   *
   * @param onStep called after each step, on the caller's thread
   */
  public Result search(LoadOptions base, Options options, ProgressListener progress, Consumer<Step> onStep) {
    double lo = 0;
    double hi = Double.POSITIVE_INFINITY;
    RunResult best = null;
    double rate = options.startRate();
    List<Step> steps = new ArrayList<>();
    String stopped = "step limit (" + options.maxSteps() + ") reached";
    for (int n = 1; n <= options.maxSteps(); n++) {
      RunResult r = runner.run(base.atRate(rate, base.name() + "@" + rateLabel(rate)), progress);
      String reason = verdict(r, options);
      boolean passed = reason.isEmpty();
      Step step = new Step(n, rate, passed, passed ? "p99 " + r.latencyMs().p99() + " ms, errors "
          + r.errors() : reason, r);
      steps.add(step);
      onStep.accept(step);
      if (passed) {
        lo = rate;
        best = r;
      } else {
        hi = rate;
      }
      double next;
      if (hi == Double.POSITIVE_INFINITY) {
        if (rate >= options.maxRate()) {
          stopped = "max rate " + rateLabel(options.maxRate()) + " passed";
          break;
        }
        next = Math.min(rate * 2, options.maxRate());
      } else {
        if (hi - lo <= options.precision() * hi) {
          stopped = "converged within " + Math.round(options.precision() * 100) + "%";
          break;
        }
        next = (lo + hi) / 2;
      }
      rate = Math.round(next * 10) / 10.0;
      if (rate <= 0) {
        stopped = "no rate passed";
        break;
      }
    }
    return new Result(base.name(), options, lo, best, List.copyOf(steps), stopped);
  }

  /** Empty if the run passes, otherwise why not. */
  static String verdict(RunResult r, Options o) {
    List<String> why = new ArrayList<>();
    if (r.requests() == 0) {
      why.add("no requests completed");
    }
    if (r.latencyMs().p99() > o.p99TargetMs()) {
      why.add(String.format(Locale.ROOT, "p99 %.3f ms > %.3f ms", r.latencyMs().p99(), o.p99TargetMs()));
    }
    if (r.errorRatio() > o.maxErrorRatio()) {
      why.add(String.format(Locale.ROOT, "errors %.3f%% > %.3f%%", r.errorRatio() * 100, o.maxErrorRatio() * 100));
    }
    return String.join("; ", why);
  }

  static String rateLabel(double rate) {
    return rate == Math.rint(rate) ? Long.toString((long) rate) : String.format(Locale.ROOT, "%.1f", rate);
  }
}
