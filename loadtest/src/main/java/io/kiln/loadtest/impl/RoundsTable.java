package io.kiln.loadtest.impl;

import io.kiln.loadtest.impl.RoundVerdict.Direction;
import io.kiln.loadtest.impl.RoundVerdict.Judgement;
import io.kiln.loadtest.impl.RoundVerdict.Round;
import io.kiln.loadtest.impl.RoundVerdict.Unit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * A scenario's rounds in the plain format any benchmark can write — the place for real-model figures (an OCR
 * pipeline, a ResNet deployment, ...) next to their limit, judged by {@link RoundVerdict} like the rest of RESULTS.md.
 * A results folder holding both files below (and {@code meta.txt} with {@code finished=}, as {@code lib.sh}'s
 * {@code meta_start}/{@code meta_end} write it) is rendered in RESULTS.md's generated part, its checks in the
 * targets-and-floors table. Tab-separated, a header line first, {@code #} lines ignored:
 *
 * <pre>
 * rounds.tsv   round  name  start  value  unit  errors
 *              1      det-c1-kiln    1733400000.25  26.9  images/s  0
 *              1      det-c1-direct  1733400012.50  50.1  images/s  0
 * checks.tsv   label  kind  run  base  op  target  show
 *              det, c=1: Kiln / direct ORT  target  det-c1-kiln  det-c1-direct  &gt;=  0.9  percent
 * </pre>
 *
 * <ul>
 *   <li>{@code round}: 1, 2, 3, ...; {@code name}: the measurement; {@code start}: when it began, epoch seconds (used to
 *       check that the limit was measured again each round, alternating with Kiln); {@code value}: a number (a rate,
 *       a latency); {@code unit}: free text shown beside it; {@code errors}: failed requests in it (a round with any
 *       leaves the check "not judged").</li>
 *   <li>{@code label}: what is checked; {@code kind}: {@code target} for the issue's target, {@code floor ...} for a
 *       lower floor (shown as such, never as the target); {@code run}: a measurement name; {@code base}: the limit's
 *       measurement name, or {@code -} for an absolute check on {@code run}'s value; {@code op}: {@code >=}, {@code <=},
 *       {@code >} or {@code <}; {@code target}: a number, for a ratio the fraction (0.9 for 90 %); {@code show}:
 *       {@code percent}, {@code times}, {@code ms}, {@code us} or {@code per_second}.</li>
 * </ul>
 *
 * <p>A folder whose {@code meta.txt} says the run did not wait for a quiet machine ({@code load_wait=... measured
 * anyway}, written by {@code lib.sh}'s {@code wait_for_quiet}) is rendered with its figures but no verdict: "not
 * judged: measured on a busy machine". Its figures may be kept to show that the format works; they decide nothing.
 *
 * @param measurements every measurement of every round
 * @param checks       what is judged
 * @param busy         why the machine was not quiet ({@code meta.txt}'s {@code load_wait}), or null
 */
public record RoundsTable(List<Measurement> measurements, List<CheckSpec> checks, String busy) {

  public RoundsTable(List<Measurement> measurements, List<CheckSpec> checks) {
    this(measurements, checks, null);
  }

  public static final String ROUNDS = "rounds.tsv";
  public static final String CHECKS = "checks.tsv";

  /** One line of {@code rounds.tsv}. */
  public record Measurement(int round, String name, double start, double value, String unit, long errors) {
  }

  /** One line of {@code checks.tsv}. */
  public record CheckSpec(String label, String kind, String run, String base, Direction op, double value,
      Unit unit) {
    public RoundVerdict.Target target() {
      return new RoundVerdict.Target(op, value, unit);
    }
  }

  /** A check judged over its rounds, with each round's figures in words. */
  public record Judged(CheckSpec spec, List<String> perRound, Judgement judgement) {
  }

  /** Whether {@code dir} holds a rounds table. */
  public static boolean present(Path dir) {
    return Files.isRegularFile(dir.resolve(ROUNDS)) && Files.isRegularFile(dir.resolve(CHECKS));
  }

  /** This table with only the checks whose run is of one of {@code parts} (a run named {@code <part>-...}). */
  public RoundsTable onlyParts(List<String> parts) {
    return new RoundsTable(measurements, checks.stream()
        .filter(c -> parts.stream().anyMatch(p -> c.run().startsWith(p + "-"))).toList(), busy);
  }

  /**
   * Reads {@code dir/rounds.tsv} and {@code dir/checks.tsv}.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException naming the file and line of a malformed line
   */
  public static RoundsTable read(Path dir) throws IOException {
    List<Measurement> ms = new ArrayList<>();
    for (Line l : lines(dir.resolve(ROUNDS), 6)) {
      try {
        ms.add(new Measurement(Integer.parseInt(l.f[0]), l.f[1], Double.parseDouble(l.f[2]), Double.parseDouble(l.f[3]),
            l.f[4], Long.parseLong(l.f[5])));
      } catch (NumberFormatException e) {
        throw l.error("round, start, value and errors must be numbers");
      }
    }
    List<CheckSpec> cs = new ArrayList<>();
    for (Line l : lines(dir.resolve(CHECKS), 7)) {
      Direction op = switch (l.f[4]) {
        case ">=" -> Direction.AT_LEAST;
        case "<=" -> Direction.AT_MOST;
        case ">" -> Direction.ABOVE;
        case "<" -> Direction.BELOW;
        default -> throw l.error("op must be >=, <=, > or <, not " + l.f[4]);
      };
      Unit unit;
      try {
        unit = Unit.valueOf(l.f[6].toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw l.error("show must be percent, times, ms, us or per_second, not " + l.f[6]);
      }
      double target;
      try {
        target = Double.parseDouble(l.f[5]);
      } catch (NumberFormatException e) {
        throw l.error("target must be a number, not " + l.f[5]);
      }
      cs.add(new CheckSpec(l.f[0], l.f[1], l.f[2], l.f[3].equals("-") ? null : l.f[3], op, target, unit));
    }
    return new RoundsTable(List.copyOf(ms), List.copyOf(cs), busy(dir.resolve("meta.txt")));
  }

  /** {@code meta.txt}'s {@code load_wait} (its last) when it says the run measured anyway; else null. */
  private static String busy(Path meta) throws IOException {
    String wait = Files.isRegularFile(meta) ? ResultsFolder.meta(meta).get("load_wait") : null;
    return wait != null && wait.contains("measured anyway") ? wait : null;
  }

  private record Line(Path file, int number, String[] f) {
    IllegalArgumentException error(String why) {
      return new IllegalArgumentException(file + ":" + number + ": " + why);
    }
  }

  private static List<Line> lines(Path file, int fields) throws IOException {
    List<Line> out = new ArrayList<>();
    List<String> all = Files.readAllLines(file);
    boolean header = true;
    for (int i = 0; i < all.size(); i++) {
      String s = all.get(i);
      if (s.isBlank() || s.startsWith("#")) {
        continue;
      }
      if (header) { // the first line names the columns
        header = false;
        continue;
      }
      String[] f = s.split("\t", -1);
      if (f.length != fields) {
        throw new IllegalArgumentException(file + ":" + (i + 1) + ": " + fields + " tab-separated fields expected, found "
            + f.length);
      }
      for (int j = 0; j < f.length; j++) {
        f[j] = f[j].trim();
      }
      out.add(new Line(file, i + 1, f));
    }
    return out;
  }

  /** Every check, judged: rounds in order, a ratio's limit required in each round and alternating with the run. */
  public List<Judged> judge() {
    Map<Integer, Map<String, Measurement>> byRound = new TreeMap<>();
    for (Measurement m : measurements) {
      byRound.computeIfAbsent(m.round(), k -> new java.util.HashMap<>()).put(m.name(), m);
    }
    List<Judged> out = new ArrayList<>();
    for (CheckSpec c : checks) {
      List<Round> rounds = new ArrayList<>();
      List<String> words = new ArrayList<>();
      List<Double> runStarts = new ArrayList<>();
      List<Double> baseStarts = new ArrayList<>();
      for (Map.Entry<Integer, Map<String, Measurement>> e : byRound.entrySet()) {
        Measurement a = e.getValue().get(c.run());
        Measurement b = c.base() == null ? null : e.getValue().get(c.base());
        if (a == null || (c.base() != null && b == null)) {
          continue;
        }
        String label = "r" + e.getKey();
        List<String> bad = new ArrayList<>();
        for (Measurement m : c.base() == null ? List.of(a) : List.of(a, b)) {
          if (m.errors() > 0) {
            bad.add(m.name() + " had " + m.errors() + " errors");
          } else if (c.base() != null && !(m.value() > 0)) {
            bad.add(m.name() + " is " + m.value());
          }
        }
        double v = b == null ? a.value() : a.value() / b.value();
        rounds.add(bad.isEmpty() ? Round.of(label, v) : Round.failed(label, String.join(", ", bad)));
        words.add(label + ": " + (b == null ? num(a.value()) + " " + a.unit()
            : num(a.value()) + " / " + num(b.value()) + " " + a.unit() + " = " + (bad.isEmpty() ? c.unit().format(v)
            : "not usable")));
        runStarts.add(a.start());
        baseStarts.add(b == null ? a.start() : b.start());
      }
      if (rounds.isEmpty()) {
        out.add(new Judged(c, List.of(), RoundVerdict.notMeasured(c.target(), c.run()
            + (c.base() == null ? "" : " with " + c.base()))));
        continue;
      }
      boolean interleaved = c.base() == null || RoundVerdict.interleaved(runStarts, baseStarts);
      Judgement j = RoundVerdict.judge(rounds, c.target(), interleaved,
          interleaved ? null : "the start times do not show " + c.base() + " measured again in every round, "
              + "alternating with " + c.run());
      if (busy != null) {
        j = new Judgement(RoundVerdict.Status.NOT_JUDGED, j.target(), j.values(), j.median(), j.min(), j.max(),
            "measured on a busy machine (" + busy + ")");
      }
      out.add(new Judged(c, List.copyOf(words), j));
    }
    return out;
  }

  /** The checks table and every round's measurements, for RESULTS.md. */
  public String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("| check | kind | per round | median (range) | target | verdict |\n|---|---|---|---|---:|---|\n");
    for (Judged j : judge()) {
      sb.append("| ").append(j.spec().label()).append(" | ").append(j.spec().kind()).append(" | ")
          .append(j.perRound().isEmpty() ? "–" : String.join("; ", j.perRound())).append(" | ")
          .append(j.judgement().measured()).append(" | ").append(j.judgement().target()).append(" | ")
          .append(j.judgement().markdown()).append(" |\n");
    }
    sb.append("\n| round | measurement | value | unit | errors | started (UTC) |\n|---:|---|---:|---|---:|---|\n");
    measurements.stream().sorted(Comparator.comparingInt(Measurement::round).thenComparingDouble(Measurement::start))
        .forEach(m -> sb.append("| ").append(m.round()).append(" | ").append(m.name()).append(" | ").append(num(m.value()))
            .append(" | ").append(m.unit()).append(" | ").append(m.errors()).append(" | ").append(time(m.start()))
            .append(" |\n"));
    sb.append('\n');
    return sb.toString();
  }

  private static String num(double v) {
    return String.format(Locale.ROOT, Math.abs(v) >= 100 ? "%,.0f" : Math.abs(v) >= 1 ? "%.2f" : "%.4f", v);
  }

  private static String time(double epochSeconds) {
    if (!Double.isFinite(epochSeconds)) {
      return "?";
    }
    return java.time.Instant.ofEpochMilli((long) (epochSeconds * 1000)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS)
        .toString();
  }
}
