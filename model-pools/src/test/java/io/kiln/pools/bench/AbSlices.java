package io.kiln.pools.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * The A/B interleaving of {@link PoolBenchmark}: short slices of direct runner calls (A) and of the pool (B)
 * alternate — for each batch size, direct then pool, same model, same threads — and every round yields its own
 * ratio (the best pool slice over the best direct batched slice of that round). Load from other processes
 * that drifts over minutes then moves both sides of a round alike instead of one scenario's figure; even
 * rounds run their slices in reverse order so that a linear drift inside a round cancels over two rounds.
 * Stateless; {@link #run} blocks for as long as the slices it runs.
 */
final class AbSlices {

  /** What a slice measures. */
  enum Kind {
    /** Direct {@code ModelRunner.infer} calls at the slice's batch size, back to back on one thread. */
    DIRECT,
    /** The pool with {@code max_batch_size} = the slice's batch size, under closed-loop one-image load. */
    POOL
  }

  /** One slice of a round; a {@link Kind#POOL} slice of batch 1 is the pool with batching off. */
  record Slice(Kind kind, int batch) {
    boolean batched() {
      return batch > 1;
    }

    @Override
    public String toString() {
      return (kind == Kind.DIRECT ? "direct b" : "pool b") + batch;
    }
  }

  /** What a round measured: the best batched direct and pool slices and their ratio. */
  record Round(int round, Slice direct, double directPerSecond, Slice pool, double poolPerSecond) {
    double ratio() {
      return poolPerSecond / directPerSecond;
    }
  }

  /** The spread of the per-round ratios. */
  record Summary(int rounds, double median, double mean, double min, double max, double sd) {
    @Override
    public String toString() {
      return String.format(Locale.ROOT, "A/B over %d rounds: pool/direct median %.3f, mean %.3f, min %.3f, max %.3f, "
          + "sd %.3f", rounds, median, mean, min, max, sd);
    }
  }

  private AbSlices() {
  }

  /**
   * Round {@code round}'s slices (1-based): for each batch size, direct then pool (A/B/A/B), then the pool with
   * batching off when {@code unbatched}; every even round the same slices in reverse order.
   */
  static List<Slice> order(int round, List<Integer> batchSizes, boolean unbatched) {
    List<Slice> out = new ArrayList<>();
    for (int b : batchSizes) {
      if (b < 2) {
        throw new IllegalArgumentException("batch sizes of the A/B rounds must be >= 2 (batching on), got " + b);
      }
      out.add(new Slice(Kind.DIRECT, b));
      out.add(new Slice(Kind.POOL, b));
    }
    if (unbatched) {
      out.add(new Slice(Kind.POOL, 1));
    }
    if (round % 2 == 0) {
      Collections.reverse(out);
    }
    return out;
  }

  /** The round's verdict from its slices' throughputs (per second), in any order. */
  static Round judge(int round, List<Slice> slices, List<Double> perSecond) {
    Optional<Integer> direct = best(slices, perSecond, Kind.DIRECT);
    Optional<Integer> pool = best(slices, perSecond, Kind.POOL);
    if (direct.isEmpty() || pool.isEmpty()) {
      throw new IllegalArgumentException("a round needs a batched direct and a batched pool slice: " + slices);
    }
    return new Round(round, slices.get(direct.get()), perSecond.get(direct.get()), slices.get(pool.get()),
        perSecond.get(pool.get()));
  }

  private static Optional<Integer> best(List<Slice> slices, List<Double> perSecond, Kind kind) {
    Optional<Integer> best = Optional.empty();
    for (int i = 0; i < slices.size(); i++) {
      if (slices.get(i).kind() == kind && slices.get(i).batched()
          && (best.isEmpty() || perSecond.get(i) > perSecond.get(best.get()))) {
        best = Optional.of(i);
      }
    }
    return best;
  }

  static Summary summarize(List<Round> rounds) {
    if (rounds.isEmpty()) {
      throw new IllegalArgumentException("no rounds");
    }
    List<Double> r = rounds.stream().map(Round::ratio).sorted(Comparator.naturalOrder()).toList();
    int n = r.size();
    double median = n % 2 == 1 ? r.get(n / 2) : (r.get(n / 2 - 1) + r.get(n / 2)) / 2;
    double mean = r.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    double var = n < 2 ? 0 : r.stream().mapToDouble(x -> (x - mean) * (x - mean)).sum() / (n - 1);
    return new Summary(n, median, mean, r.get(0), r.get(n - 1), Math.sqrt(var));
  }

  /**
   * Runs {@code rounds} rounds: each slice of {@link #order} measured by {@code measure}, in that order, then
   * {@code onRound} with the round's verdict and its results in slice order.
   *
   * @return every round's verdict, in order
   */
  static <R> List<Round> run(int rounds, List<Integer> batchSizes, boolean unbatched, Function<Slice, R> measure,
                             ToDoubleFunction<R> perSecond, BiConsumer<Round, List<R>> onRound) {
    List<Round> out = new ArrayList<>();
    for (int round = 1; round <= rounds; round++) {
      List<Slice> slices = order(round, batchSizes, unbatched);
      List<R> results = new ArrayList<>();
      List<Double> rates = new ArrayList<>();
      for (Slice s : slices) {
        R r = measure.apply(s);
        results.add(r);
        rates.add(perSecond.applyAsDouble(r));
      }
      Round verdict = judge(round, slices, rates);
      onRound.accept(verdict, results);
      out.add(verdict);
    }
    return out;
  }

  /** The line a round prints; {@code loadtest}'s BenchOutput reads it back. */
  static String line(Round r) {
    return String.format(Locale.ROOT, "A/B round %d: direct %.1f images/s (batch %d), pool %.1f images/s "
        + "(max_batch_size %d), ratio %.3f", r.round(), r.directPerSecond(), r.direct().batch(), r.poolPerSecond(),
        r.pool().batch(), r.ratio());
  }
}
