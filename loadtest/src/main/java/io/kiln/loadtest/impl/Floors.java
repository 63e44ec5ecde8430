package io.kiln.loadtest.impl;

import io.kiln.loadtest.PinnedSummary;
import io.kiln.loadtest.RunResult;
import io.kiln.loadtest.impl.RoundVerdict.Direction;
import io.kiln.loadtest.impl.RoundVerdict.Judgement;
import io.kiln.loadtest.impl.RoundVerdict.Round;
import io.kiln.loadtest.impl.RoundVerdict.Target;
import io.kiln.loadtest.impl.RoundVerdict.Unit;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The targets and floors Kiln's issues set, judged from the latest results folders by {@link RoundVerdict}'s rules
 * (at least three rounds, a ratio's limit measured again in every round, median and range, "met" only when every round
 * meets it, "unstable" when the range straddles it). A target is the issue's own number; a floor is a lower number set
 * later (#28's) or an earlier issue's, and is labelled as such, never as the target. Stateless.
 */
public final class Floors {

  /** What a row is held against. */
  public static final String TARGET = "target";
  public static final String FLOOR_28 = "floor (#28), not the target";
  public static final String EARLIER = "floor (earlier issue)";
  public static final String REFERENCE = "reference, not a target";

  /**
   * One target or floor and its verdict.
   *
   * @param kind    {@link #TARGET}, a floor, or {@link #REFERENCE}
   * @param verdict {@code met}, {@code **MISSED** (…)}, {@code **UNSTABLE** (…)}, {@code insufficient rounds (…)},
   *                {@code not judged: …} or {@code not measured}
   */
  public record Verdict(String area, String kind, String floor, String measured, String verdict, String source) {
  }

  /** A run name's round: {@code noop-c16.r2} is round 2 of {@code noop-c16}. */
  private static final Pattern ROUND_NAME = Pattern.compile("^(.+)\\.r(\\d+)$");

  private Floors() {
  }

  /**
   * Every target and floor, judged. The gateway floors of the first issues (scenarios {@code noop}, {@code tiny},
   * {@code resnet}) are listed only where such a folder exists; a folder in the rounds format ({@link RoundsTable})
   * adds its own checks.
   *
   * @throws IOException if a folder cannot be read
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
    for (ResultsFolder f : latest.values()) {
      if (RoundsTable.present(f.dir())) {
        for (RoundsTable.Judged j : f.roundsTable().judge()) {
          out.add(new Verdict(f.scenario(), j.spec().kind(), j.spec().label() + " " + j.judgement().target(),
              j.judgement().measured(), j.judgement().markdown(), source(f)));
        }
      }
    }
    return out;
  }

  /** The request-path issue's targets and #28's floors, as {@link PinnedSummary} judges them. */
  private static void pinned(ResultsFolder f, List<Verdict> out) throws IOException {
    if (f == null) {
      out.add(new Verdict("request path", TARGET, "the request-path targets (loadtest/run.sh pinned)", "–",
          "not measured", "–"));
      return;
    }
    for (PinnedSummary.Check c : PinnedSummary.checks(f.dir())) {
      out.add(new Verdict("request path", c.kind() == PinnedSummary.Kind.TARGET ? TARGET : FLOOR_28,
          c.label() + " " + c.goal(), c.measured(), c.judgement().markdown(), source(f)));
    }
  }

  private static void runtimeLocal(ResultsFolder f, List<Verdict> out) {
    String src = source(f);
    List<List<BenchOutput.CallLine>> runs = f == null ? List.of() : BenchOutput.callRuns(f.output());
    String bareNote = bareNote(runs);
    for (String mode : List.of("EVENT_LOOP", "WORKER")) {
      out.add(row("runtime", TARGET, "local actor call (" + mode + ") p50, 1 in flight, from another thread "
              + "(request-path issue)", new Target(Direction.AT_MOST, 20, Unit.US), runs,
          line("actor " + mode + ", 1 in flight", BenchOutput.CallLine::p50Us), bareNote, src));
    }
    out.add(row("runtime", TARGET, "local actor calls/s from one caller, 64 in flight (request-path issue; best actor "
            + "mode of each run)", new Target(Direction.AT_LEAST, 1_000_000, Unit.PER_SECOND), runs,
        best(c -> c.name().startsWith("actor ") && c.name().endsWith(", 64 in flight")), "", src));
    for (String mode : List.of("EVENT_LOOP", "WORKER")) {
      out.add(row("runtime", EARLIER, "local actor call (" + mode + ") p50, 1 in flight",
          new Target(Direction.BELOW, 50, Unit.US), runs, line("actor " + mode + ", 1 in flight",
              BenchOutput.CallLine::p50Us), bareNote, src));
    }
    out.add(row("runtime", EARLIER, "local actor calls/s from one caller, any in flight (Ray: ~2,000)",
        new Target(Direction.ABOVE, 50_000, Unit.PER_SECOND), runs,
        best(c -> c.name().startsWith("actor ") && !c.name().endsWith(", 1 in flight")), "", src));
  }

  private static void runtimeCluster(ResultsFolder f, List<Verdict> out) {
    String src = source(f);
    List<List<BenchOutput.CallLine>> runs = f == null ? List.of() : BenchOutput.callRuns(f.output());
    out.add(row("runtime", TARGET, "cross-node (loopback) actor call (EVENT_LOOP) p50, 1 in flight (request-path issue)",
        new Target(Direction.AT_MOST, 150, Unit.US), runs, line("remote EVENT_LOOP, 1 in flight",
            BenchOutput.CallLine::p50Us), "", src));
    for (String mode : List.of("EVENT_LOOP", "WORKER")) {
      out.add(row("runtime", EARLIER, "cross-node (loopback) actor call (" + mode + ") p50, 1 in flight",
          new Target(Direction.AT_MOST, 1000, Unit.US), runs, line("remote " + mode + ", 1 in flight",
              BenchOutput.CallLine::p50Us), "", src));
    }
  }

  /** One figure per run (absolute: no limit to alternate with), judged. */
  private static Verdict row(String area, String kind, String what, Target t, List<List<BenchOutput.CallLine>> runs,
      Function<List<BenchOutput.CallLine>, Optional<Double>> value, String note, String src) {
    List<Round> rounds = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      int n = i + 1;
      value.apply(runs.get(i)).ifPresent(v -> rounds.add(Round.of("run " + n, v)));
    }
    Judgement j = RoundVerdict.judge(rounds, t, true, null);
    return new Verdict(area, kind, what + " " + t, j.measured() + (rounds.isEmpty() ? "" : note), j.markdown(), src);
  }

  private static Function<List<BenchOutput.CallLine>, Optional<Double>> line(String name,
      Function<BenchOutput.CallLine, Double> f) {
    return lines -> lines.stream().filter(c -> c.name().equals(name)).findFirst().map(f);
  }

  private static Function<List<BenchOutput.CallLine>, Optional<Double>> best(
      java.util.function.Predicate<BenchOutput.CallLine> p) {
    return lines -> lines.stream().filter(p).map(BenchOutput.CallLine::perSecond).max(Double::compare);
  }

  /** The bare event bus's p50 in the same runs: the machine's own wake-up cost, for context. */
  private static String bareNote(List<List<BenchOutput.CallLine>> runs) {
    List<Double> bare = new ArrayList<>();
    for (List<BenchOutput.CallLine> r : runs) {
      r.stream().filter(c -> c.name().equals("bare event bus, 1 in flight")).findFirst().ifPresent(c -> bare.add(c.p50Us()));
    }
    if (bare.isEmpty()) {
      return "";
    }
    bare.sort(Double::compare);
    double median = bare.size() % 2 == 1 ? bare.get(bare.size() / 2)
        : (bare.get(bare.size() / 2 - 1) + bare.get(bare.size() / 2)) / 2;
    return "; bare event bus in the same run" + (bare.size() > 1 ? "s: median " : ": ") + Unit.US.format(median);
  }

  private static void pools(ResultsFolder f, List<Verdict> out) {
    String src = source(f);
    String floor1 = "pool, batching on, concurrency 32 / best direct batched throughput";
    Target ninety = new Target(Direction.AT_LEAST, 0.9, Unit.PERCENT);
    List<BenchOutput.AbRound> ab = f == null ? List.of() : BenchOutput.abRounds(f.output());
    List<List<BenchOutput.PoolLine>> tables = f == null ? List.of() : BenchOutput.poolRounds(f.output());
    if (!ab.isEmpty()) {
      Judgement j = RoundVerdict.judge(ab.stream().map(r -> Round.of("round " + r.round(), r.ratio())).toList(), ninety,
          true, null);
      out.add(new Verdict("pools", EARLIER, floor1 + ", A/B interleaved " + ninety, j.measured(), j.markdown(), src));
    } else {
      // Before the A/B rounds, PoolBenchmark measured every direct scenario and then every pool one: not alternated.
      List<Round> rounds = new ArrayList<>();
      for (int i = 0; i < tables.size(); i++) {
        Optional<BenchOutput.PoolLine> direct = batchedDirect(tables.get(i));
        Optional<BenchOutput.PoolLine> on = batchingOn(tables.get(i));
        if (direct.isPresent() && on.isPresent()) {
          rounds.add(Round.of("round " + (i + 1), on.get().imagesPerSecond() / direct.get().imagesPerSecond()));
        }
      }
      Judgement j = RoundVerdict.judge(rounds, ninety, false, "direct and pool were measured one after the other, "
          + "not alternated");
      out.add(new Verdict("pools", EARLIER, floor1 + " " + ninety, j.measured(), j.markdown(), src));
    }
    Target better = new Target(Direction.ABOVE, 1.0, Unit.TIMES);
    List<Round> rounds = new ArrayList<>();
    for (int i = 0; i < tables.size(); i++) {
      Optional<BenchOutput.PoolLine> on = batchingOn(tables.get(i));
      Optional<BenchOutput.PoolLine> off = tables.get(i).stream()
          .filter(l -> l.scenario().endsWith("max_batch_size 1") && l.concurrency() == 32).findFirst();
      if (on.isPresent() && off.isPresent()) {
        rounds.add(Round.of("round " + (i + 1), on.get().imagesPerSecond() / off.get().imagesPerSecond()));
      }
    }
    Judgement j = RoundVerdict.judge(rounds, better, true, null);
    out.add(new Verdict("pools", EARLIER, "pool, batching on / batching off, concurrency 32 " + better, j.measured(),
        j.markdown(), src));
  }

  private static Optional<BenchOutput.PoolLine> batchedDirect(List<BenchOutput.PoolLine> t) {
    return t.stream().filter(l -> l.scenario().startsWith("direct") && l.meanBatch() > 1)
        .max(Comparator.comparingDouble(BenchOutput.PoolLine::imagesPerSecond));
  }

  private static Optional<BenchOutput.PoolLine> batchingOn(List<BenchOutput.PoolLine> t) {
    return t.stream().filter(l -> l.scenario().startsWith("pool") && !l.scenario().endsWith(" 1")
        && l.concurrency() == 32).max(Comparator.comparingDouble(BenchOutput.PoolLine::imagesPerSecond));
  }

  private static void gateway(ResultsFolder noop, ResultsFolder tiny, List<Verdict> out) {
    Target half = new Target(Direction.AT_LEAST, 0.5, Unit.PERCENT);
    for (int c : new int[] {1, 16, 64}) {
      String floor = "gateway, no-op model / bare server, concurrency " + c + " " + half;
      Map<Integer, RunResult> k = rounds(noop, "noop-c" + c);
      Map<Integer, RunResult> b = rounds(noop, "bare-c" + c);
      List<Round> rs = new ArrayList<>();
      List<Double> kStarts = new ArrayList<>();
      List<Double> bStarts = new ArrayList<>();
      for (Map.Entry<Integer, RunResult> e : k.entrySet()) {
        RunResult bare = b.get(e.getKey());
        if (bare == null) {
          continue;
        }
        RunResult kiln = e.getValue();
        String label = "r" + e.getKey();
        rs.add(kiln.errors() > 0 || bare.errors() > 0 || !(bare.achievedRps() > 0)
            ? Round.failed(label, "errors or no requests in " + kiln.name() + " / " + bare.name())
            : Round.of(label, kiln.achievedRps() / bare.achievedRps()));
        kStarts.add(epoch(kiln));
        bStarts.add(epoch(bare));
      }
      boolean interleaved = !rs.isEmpty() && k.keySet().stream().allMatch(n -> n > 0)
          && RoundVerdict.interleaved(kStarts, bStarts);
      Judgement j = RoundVerdict.judge(rs, half, interleaved, "runs not named NAME.rN, or the limit not measured "
          + "again in each round");
      out.add(new Verdict("gateway", EARLIER, floor, j.measured(), j.markdown(), source(noop)));
    }
    Map<Integer, RunResult> t = rounds(tiny, "tiny-c16");
    List<Round> rate = new ArrayList<>();
    List<Round> p99 = new ArrayList<>();
    t.forEach((n, r) -> {
      String label = "r" + n;
      rate.add(r.errors() > 0 ? Round.failed(label, r.name() + " had " + r.errors() + " errors")
          : Round.of(label, r.achievedRps()));
      p99.add(r.errors() > 0 ? Round.failed(label, r.name() + " had " + r.errors() + " errors")
          : Round.of(label, r.latencyMs().p99()));
    });
    Target rateT = new Target(Direction.AT_LEAST, 5000, Unit.PER_SECOND);
    Target p99T = new Target(Direction.BELOW, 20, Unit.MS);
    Judgement jr = RoundVerdict.judge(rate, rateT, true, null);
    Judgement jp = RoundVerdict.judge(p99, p99T, true, null);
    out.add(new Verdict("gateway", EARLIER, "gateway, tiny model, JSON, concurrency 16: req/s " + rateT, jr.measured(),
        jr.markdown(), source(tiny)));
    out.add(new Verdict("gateway", EARLIER, "gateway, tiny model, JSON, concurrency 16: p99 " + p99T, jp.measured(),
        jp.markdown(), source(tiny)));
  }

  /** Round number → run: {@code NAME.rN} runs, or {@code NAME} alone as round 0 (a run from before rounds). */
  private static Map<Integer, RunResult> rounds(ResultsFolder f, String name) {
    Map<Integer, RunResult> out = new TreeMap<>();
    if (f == null) {
      return out;
    }
    for (RunResult r : f.runs()) {
      Matcher m = ROUND_NAME.matcher(r.name());
      if (m.matches() && m.group(1).equals(name)) {
        out.put(Integer.parseInt(m.group(2)), r);
      } else if (r.name().equals(name)) {
        out.put(0, r);
      }
    }
    return out;
  }

  private static double epoch(RunResult r) {
    try {
      return r.startedAt() == null ? Double.NaN : Instant.parse(r.startedAt()).toEpochMilli() / 1000.0;
    } catch (DateTimeParseException e) {
      return Double.NaN;
    }
  }

  /** Not an issue's floor: the pools floor, end to end through the gateway; the direct limit is measured once. */
  private static void resnet(ResultsFolder f, List<Verdict> out) {
    Target ninety = new Target(Direction.AT_LEAST, 0.9, Unit.PERCENT);
    String floor = "Kiln ResNet-18 over HTTP, concurrency 32, batching on / best direct batched throughput " + ninety;
    Optional<RunResult> k = f.run("resnet-c32");
    Optional<RunResult> d = f.runs().stream().filter(r -> r.name().startsWith("direct-b") && !r.name().equals("direct-b1"))
        .max(Comparator.comparingDouble(RunResult::achievedRps));
    List<Round> rounds = k.isPresent() && d.isPresent()
        ? List.of(Round.of("run", k.get().achievedRps() / d.get().achievedRps())) : List.of();
    Judgement j = RoundVerdict.judge(rounds, ninety, false, "the direct limit is measured once, before the servers");
    out.add(new Verdict("pools", REFERENCE, floor, j.measured(), j.markdown(), source(f)));
  }

  private static String source(ResultsFolder f) {
    return f == null ? "–" : f.dir().getFileName().toString();
  }
}
