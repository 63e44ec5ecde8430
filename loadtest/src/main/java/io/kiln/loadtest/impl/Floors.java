package io.kiln.loadtest.impl;

import io.kiln.loadtest.PinnedSummary;
import io.kiln.loadtest.RunResult;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * The performance floors Kiln's issues set, judged from the latest results folders. A floor is a number
 * to measure against, not a timed test: each verdict quotes what was measured and where. Stateless.
 */
public final class Floors {

  /** One floor and its verdict: {@code met}, {@code MISSED} or {@code not measured}. */
  public record Verdict(String area, String floor, String measured, String verdict, String source) {
  }

  private Floors() {
  }

  /**
   * Every floor, judged. The gateway floors of the first issues (scenarios {@code noop}, {@code tiny},
   * {@code resnet}) are listed only where such a folder exists: the {@code pinned} scenario measures the
   * request path the way the request-path issue states its targets, and its checks are listed instead.
   *
   * @throws IOException if the pinned folder cannot be read
   */
  public static List<Verdict> judge(Map<String, ResultsFolder> latest) throws IOException {
    List<Verdict> out = new ArrayList<>();
    pinned(latest.get("pinned"), out);
    runtimeLocal(latest.get("runtime-local"), out);
    runtimeCluster(latest.get("runtime-cluster"), out);
    pools(latest.get("pools"), out);
    if (latest.containsKey("noop") || latest.containsKey("tiny")) {
      gateway(latest.get("noop"), latest.get("tiny"), out);
    }
    if (latest.containsKey("resnet")) {
      resnet(latest.get("resnet"), out);
    }
    return out;
  }

  /** The request-path issue's targets, as {@link PinnedSummary} judges them. */
  private static void pinned(ResultsFolder f, List<Verdict> out) throws IOException {
    if (f == null) {
      out.add(missing("request path", "the request-path targets (loadtest/run.sh pinned)", source(null)));
      return;
    }
    for (PinnedSummary.Check c : PinnedSummary.checks(f.dir())) {
      String verdict = c.met() ? "met" : c.verdict().startsWith("missed") ? "**MISSED** (" + c.verdict() + ")"
          : c.verdict();
      out.add(new Verdict("request path", c.label() + " " + c.goal(), c.measured().isEmpty() ? "–" : c.measured(),
          verdict, source(f)));
    }
  }

  private static void runtimeLocal(ResultsFolder f, List<Verdict> out) {
    String src = source(f);
    List<BenchOutput.CallLine> lines = f == null ? List.of() : BenchOutput.calls(f.output());
    for (String mode : List.of("EVENT_LOOP", "WORKER")) {
      Optional<BenchOutput.CallLine> l = find(lines, c -> c.name().equals("actor " + mode + ", 1 in flight"));
      Optional<BenchOutput.CallLine> bare = find(lines, c -> c.name().equals("bare event bus, 1 in flight"));
      out.add(l.map(c -> verdict("runtime", "local actor call (" + mode + ") p50 < 50 µs",
              fmt("p50 %.1f µs, p99 %.1f µs (bare event bus p50 %s µs)", c.p50Us(), c.p99Us(),
                  bare.map(b -> fmt("%.1f", b.p50Us())).orElse("?")), c.p50Us() < 50, src))
          .orElse(missing("runtime", "local actor call (" + mode + ") p50 < 50 µs", src)));
    }
    for (String mode : List.of("EVENT_LOOP", "WORKER")) {
      String fast = "local actor call (" + mode + ") p50 ≤ 20 µs, from another thread (request-path issue)";
      out.add(find(lines, c -> c.name().equals("actor " + mode + ", 1 in flight"))
          .map(c -> verdict("runtime", fast, fmt("p50 %.1f µs, p99 %.1f µs", c.p50Us(), c.p99Us()), c.p50Us() <= 20, src))
          .orElse(missing("runtime", fast, src)));
    }
    String many = "local actor calls/s from one caller, 64 in flight ≥ 1,000,000 (request-path issue)";
    out.add(lines.stream().filter(c -> c.name().startsWith("actor ") && c.name().endsWith(", 64 in flight"))
        .max(Comparator.comparingDouble(BenchOutput.CallLine::perSecond))
        .map(c -> verdict("runtime", many, fmt("%,.0f calls/s (%s)", c.perSecond(), c.name()), c.perSecond() >= 1_000_000,
            src)).orElse(missing("runtime", many, src)));
    Optional<BenchOutput.CallLine> best = lines.stream().filter(c -> c.name().startsWith("actor ")
        && !c.name().endsWith(", 1 in flight")).max(Comparator.comparingDouble(BenchOutput.CallLine::perSecond));
    out.add(best.map(c -> verdict("runtime", "local actor calls/s from one caller > 50,000 (Ray: ~2,000)",
            fmt("%,.0f calls/s (%s)", c.perSecond(), c.name()), c.perSecond() > 50_000, src))
        .orElse(missing("runtime", "local actor calls/s from one caller > 50,000", src)));
  }

  private static void runtimeCluster(ResultsFolder f, List<Verdict> out) {
    String src = source(f);
    List<BenchOutput.CallLine> lines = f == null ? List.of() : BenchOutput.calls(f.output());
    String fast = "cross-node (loopback) actor call p50 ≤ 150 µs (request-path issue)";
    out.add(find(lines, c -> c.name().equals("remote EVENT_LOOP, 1 in flight"))
        .map(c -> verdict("runtime", fast, fmt("p50 %.1f µs, p99 %.1f µs (remote EVENT_LOOP, 1 in flight)", c.p50Us(),
            c.p99Us()), c.p50Us() <= 150, src)).orElse(missing("runtime", fast, src)));
    for (String mode : List.of("EVENT_LOOP", "WORKER")) {
      String floor = "cross-node (loopback) actor call (" + mode + ") p50 ≤ 1 ms";
      out.add(find(lines, c -> c.name().equals("remote " + mode + ", 1 in flight"))
          .map(c -> verdict("runtime", floor, fmt("p50 %.1f µs, p99 %.1f µs", c.p50Us(), c.p99Us()), c.p50Us() <= 1000,
              src)).orElse(missing("runtime", floor, src)));
    }
  }

  private static void pools(ResultsFolder f, List<Verdict> out) {
    String src = source(f);
    List<BenchOutput.PoolLine> lines = f == null ? List.of() : BenchOutput.lastPoolRound(f.output());
    Optional<BenchOutput.PoolLine> direct = lines.stream().filter(l -> l.scenario().startsWith("direct")
        && l.meanBatch() > 1).max(Comparator.comparingDouble(BenchOutput.PoolLine::imagesPerSecond));
    Optional<BenchOutput.PoolLine> on = lines.stream().filter(l -> l.scenario().startsWith("pool")
        && !l.scenario().endsWith(" 1") && l.concurrency() == 32)
        .max(Comparator.comparingDouble(BenchOutput.PoolLine::imagesPerSecond));
    Optional<BenchOutput.PoolLine> off = find(lines, l -> l.scenario().endsWith("max_batch_size 1") && l.concurrency() == 32);
    String floor1 = "pool, batching on, concurrency 32 ≥ 90 % of the best direct batched throughput";
    List<BenchOutput.AbRound> ab = f == null ? List.of() : BenchOutput.abRounds(f.output());
    Optional<BenchOutput.AbSummary> abs = BenchOutput.abSummary(ab);
    if (abs.isPresent()) {
      BenchOutput.AbSummary a = abs.get();
      out.add(verdict("pools", floor1 + ", A/B interleaved (median of the rounds)", fmt("median %.0f %% (mean %.1f %%, "
          + "%.0f–%.0f %%, sd %.1f points) over %d rounds", a.median() * 100, a.mean() * 100, a.min() * 100,
          a.max() * 100, a.sd() * 100, a.rounds()), a.median() >= 0.9, src));
    } else if (direct.isPresent() && on.isPresent()) {
      double r = on.get().imagesPerSecond() / direct.get().imagesPerSecond();
      out.add(verdict("pools", floor1, fmt("%.1f images/s (%s, mean batch %.1f) vs %.1f (%s): %.0f %%",
          on.get().imagesPerSecond(), on.get().scenario(), on.get().meanBatch(), direct.get().imagesPerSecond(),
          direct.get().scenario(), r * 100), r >= 0.9, src));
    } else {
      out.add(missing("pools", floor1, src));
    }
    String floor2 = "pool, batching on, concurrency 32 better than batching off";
    if (on.isPresent() && off.isPresent()) {
      out.add(verdict("pools", floor2, fmt("%.1f vs %.1f images/s (%.2f×)", on.get().imagesPerSecond(),
          off.get().imagesPerSecond(), on.get().imagesPerSecond() / off.get().imagesPerSecond()),
          on.get().imagesPerSecond() > off.get().imagesPerSecond(), src));
    } else {
      out.add(missing("pools", floor2, src));
    }
  }

  private static void gateway(ResultsFolder noop, ResultsFolder tiny, List<Verdict> out) {
    String src = source(noop);
    for (int c : new int[] {1, 16, 64}) {
      String floor = "gateway, no-op model, concurrency " + c + ": throughput ≥ 50 % of the bare server's";
      Optional<RunResult> k = noop == null ? Optional.empty() : noop.run("noop-c" + c);
      Optional<RunResult> b = noop == null ? Optional.empty() : noop.run("bare-c" + c);
      if (k.isPresent() && b.isPresent()) {
        double r = k.get().achievedRps() / b.get().achievedRps();
        out.add(verdict("gateway", floor, fmt("%,.0f vs %,.0f req/s: %.0f %%", k.get().achievedRps(),
            b.get().achievedRps(), r * 100), r >= 0.5 && k.get().errors() == 0, src));
      } else {
        out.add(missing("gateway", floor, src));
      }
    }
    String floor = "gateway, tiny model, JSON, concurrency 16: ≥ 5,000 req/s with p99 < 20 ms";
    Optional<RunResult> t = tiny == null ? Optional.empty() : tiny.run("tiny-c16");
    out.add(t.map(r -> verdict("gateway", floor, fmt("%,.0f req/s, p99 %.2f ms, %d errors", r.achievedRps(),
        r.latencyMs().p99(), r.errors()), r.achievedRps() >= 5000 && r.latencyMs().p99() < 20 && r.errors() == 0,
        source(tiny))).orElse(missing("gateway", floor, source(tiny))));
  }

  /** Not an issue's floor: the pools floor, end to end through the gateway. */
  private static void resnet(ResultsFolder f, List<Verdict> out) {
    String floor = "(end to end, for reference) Kiln ResNet-18 over HTTP, concurrency 32, batching on, vs the best "
        + "direct batched throughput";
    if (f == null) {
      out.add(missing("pools", floor, source(null)));
      return;
    }
    Optional<RunResult> k = f.run("resnet-c32");
    Optional<RunResult> d = f.runs().stream().filter(r -> r.name().startsWith("direct-b") && !r.name().equals("direct-b1"))
        .max(Comparator.comparingDouble(RunResult::achievedRps));
    if (k.isPresent() && d.isPresent()) {
      double r = k.get().achievedRps() / d.get().achievedRps();
      out.add(new Verdict("pools", floor, fmt("%.1f vs %.1f images/s (%s): %.0f %%", k.get().achievedRps(),
          d.get().achievedRps(), d.get().name(), r * 100), r >= 0.9 ? "≥ 90 %" : "< 90 %", source(f)));
    } else {
      out.add(missing("pools", floor, source(f)));
    }
  }

  private static <T> Optional<T> find(List<T> list, Predicate<T> p) {
    return list.stream().filter(p).findFirst();
  }

  private static Verdict verdict(String area, String floor, String measured, boolean met, String source) {
    return new Verdict(area, floor, measured, met ? "met" : "**MISSED**", source);
  }

  private static Verdict missing(String area, String floor, String source) {
    return new Verdict(area, floor, "–", "not measured", source);
  }

  private static String source(ResultsFolder f) {
    return f == null ? "–" : f.dir().getFileName().toString();
  }

  static String fmt(String format, Object... args) {
    return String.format(Locale.ROOT, format, args);
  }
}
