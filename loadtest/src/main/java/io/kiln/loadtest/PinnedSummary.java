package io.kiln.loadtest;

import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.H2loadOutput;
import io.kiln.loadtest.impl.Html;
import io.kiln.loadtest.impl.RoundVerdict;
import io.kiln.loadtest.impl.RoundVerdict.Direction;
import io.kiln.loadtest.impl.RoundVerdict.Judgement;
import io.kiln.loadtest.impl.RoundVerdict.Round;
import io.kiln.loadtest.impl.RoundVerdict.Unit;
import io.kiln.loadtest.impl.WrkOutput;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The summary of one {@code loadtest/run.sh pinned} folder: {@code summary.md}, {@code index.html} (every check with
 * Kiln's figure and its limit's side by side, round by round) and the pinned part of RESULTS.md. Every check is
 * judged by {@link RoundVerdict}'s rules: at least three rounds, the limit measured again in each round, alternating
 * with Kiln, median and range reported, "met" only when every round meets the target and "unstable" when the range
 * straddles it.
 *
 * <p>Layout read: {@code round-N/TARGET/} folders (one per round and Kiln model: {@code round-1/identity/}, ...), each
 * holding the round's own measurements — {@code NAME.wrk.txt} (wrk {@code --latency} output), {@code NAME.h2load.txt},
 * {@code NAME.json} (LoadGen run summaries, for gRPC), {@code TARGET.warm.txt} (the warm-up rounds) — the limits
 * measured in the same round beside Kiln's runs, and {@code round.txt} ({@code KEY=VALUE}: {@code start.NAME} epoch
 * seconds and {@code load.NAME} 1-minute load when NAME's measured run began, {@code ready_s}). A folder written before
 * rounds existed (the measurements directly in it) is read as one round whose order was not recorded: every check
 * then says "insufficient rounds". A check over a run with errors is not judged.
 */
public final class PinnedSummary {

  /** A measured target: {@code NAME.wrk.txt}, {@code NAME.h2load.txt} or {@code NAME.json}, and what it is. */
  record Target(String name, String what) {
    /** The warm-up target it belongs to: the name without {@code -cN}. */
    String warmTarget() {
      return name.replaceFirst("-c\\d+$", "").replace("-h2load", ""); // h2load runs after LoadGen's warm-up
    }
  }

  /** The targets in table order. */
  static final List<Target> TARGETS = List.of(
      new Target("bare-json-c1", "bare HTTP, OIP JSON work"),
      new Target("bare-json-c16", "bare HTTP, OIP JSON work"),
      new Target("bare-json-c64", "bare HTTP, OIP JSON work"),
      new Target("identity-json-c1", "Kiln identity, JSON"),
      new Target("identity-json-c16", "Kiln identity, JSON"),
      new Target("identity-json-c64", "Kiln identity, JSON"),
      new Target("mlp-json-c1", "Kiln MLP, JSON"),
      new Target("mlp-json-c16", "Kiln MLP, JSON"),
      new Target("mlp-json-c64", "Kiln MLP, JSON"),
      new Target("identity-binary-c16", "Kiln identity, binary tensors"),
      new Target("mlp-binary-c16", "Kiln MLP, binary tensors"),
      new Target("bare-grpc-c16", "bare gRPC"),
      new Target("identity-grpc-c16", "Kiln identity, gRPC"),
      new Target("mlp-grpc-c16", "Kiln MLP, gRPC"),
      new Target("bare-grpc-h2load-c16", "bare gRPC"),
      new Target("identity-grpc-h2load-c16", "Kiln identity, gRPC"),
      new Target("mlp-grpc-h2load-c16", "Kiln MLP, gRPC"),
      new Target("identity-cold-c16", "Kiln identity, cold start"),
      new Target("mlp-cold-c16", "Kiln MLP, cold start"));

  /** What a check's figure is held against. */
  public enum Kind {
    /** The request-path issue's own target: the one that decides. */
    TARGET("target"),
    /** #28's regression floor, set later and lower than the target; never the target itself. */
    FLOOR_28("floor (#28), not the target");

    private final String text;

    Kind(String text) {
      this.text = text;
    }

    public String text() {
      return text;
    }
  }

  /** One measured target of one round, from wrk, h2load or LoadGen. */
  record Measurement(String name, String client, double rps, double p50, double p99, long errors) {
  }

  /**
   * One round's folder.
   *
   * @param label {@code r1 identity}, or {@code single run} for a folder written before rounds
   * @param round the round's number (1 for a single run)
   * @param notes {@code round.txt}
   */
  record Leaf(String label, int round, Path dir, Map<String, String> notes, Map<String, Measurement> runs) {
    double start(String name) {
      try {
        return Double.parseDouble(notes.getOrDefault("start." + name, "NaN"));
      } catch (NumberFormatException e) {
        return Double.NaN;
      }
    }
  }

  /** One round of a check: the two figures it compares (b null for an absolute check) and the value or problem. */
  record Cell(Leaf leaf, Measurement a, Measurement b, Round round) {
  }

  /**
   * One check, judged over its rounds.
   *
   * @param label     what is compared, e.g. {@code identity JSON / bare JSON, c16}
   * @param kind      the request-path issue's target, or a later floor
   * @param run       the measured target's name
   * @param base      the limit's (or baseline's) name, measured in the same rounds; {@code null} for an absolute check
   * @param judgement the verdict, with median and range
   * @param cells     the rounds it was measured in
   */
  public record Check(String label, Kind kind, String run, String base, Judgement judgement, List<Cell> cells) {
    public boolean met() {
      return judgement.status() == RoundVerdict.Status.MET;
    }

    /** {@code median 64 % (62–66 %, 3 rounds)}, or {@code –}. */
    public String measured() {
      return judgement.measured();
    }

    /** {@code ≥ 70 %}. */
    public String goal() {
      return judgement.target().toString();
    }

    public String verdict() {
      return judgement.verdict();
    }
  }

  private static final Pattern ROUND_DIR = Pattern.compile("round-(\\d+)");

  private final Path dir;
  private final Map<String, String> meta;
  private final List<Leaf> leaves = new ArrayList<>();
  private final boolean rounds;
  private final List<Check> checks = new ArrayList<>();

  private PinnedSummary(Path dir) throws IOException {
    this.dir = dir;
    this.meta = keyValues(dir.resolve("meta.txt"));
    List<Path> roundDirs = new ArrayList<>();
    if (Files.isDirectory(dir)) {
      try (Stream<Path> s = Files.list(dir)) {
        s.filter(p -> Files.isDirectory(p) && ROUND_DIR.matcher(p.getFileName().toString()).matches())
            .sorted(Comparator.comparingInt(PinnedSummary::roundNumber)).forEach(roundDirs::add);
      }
    }
    rounds = !roundDirs.isEmpty();
    if (!rounds) {
      leaves.add(leaf("single run", 1, dir, true));
    }
    for (Path r : roundDirs) {
      int n = roundNumber(r);
      List<Path> subs;
      try (Stream<Path> s = Files.list(r)) {
        subs = s.filter(Files::isDirectory).filter(p -> !p.getFileName().toString().equals("warm")).sorted().toList();
      }
      if (subs.isEmpty()) {
        leaves.add(leaf("r" + n, n, r, false));
      }
      for (Path sub : subs) {
        leaves.add(leaf("r" + n + " " + sub.getFileName(), n, sub, false));
      }
    }
    String legacy = "the folder holds one run of each, measured before rounds existed";
    for (int c : new int[] {1, 16, 64}) {
      ratio(Kind.TARGET, "identity JSON / bare JSON, c" + c, "identity-json-c" + c, "bare-json-c" + c,
          c == 1 ? 0.5 : 0.7, Unit.PERCENT, legacy);
    }
    ratio(Kind.TARGET, "MLP JSON / bare JSON, c16", "mlp-json-c16", "bare-json-c16", 0.5, Unit.PERCENT, legacy);
    p99(Kind.TARGET, "MLP JSON p99, c16", "mlp-json-c16", 2.0);
    // gRPC against JSON with native clients on both sides (h2load, wrk); LoadGen's gRPC rows compare only with
    // LoadGen's bare gRPC row.
    ratio(Kind.TARGET, "identity gRPC (h2load) / identity JSON (wrk), c16", "identity-grpc-h2load-c16",
        "identity-json-c16", 1.3, Unit.TIMES, legacy);
    ratio(Kind.TARGET, "MLP gRPC (h2load) / MLP JSON (wrk), c16", "mlp-grpc-h2load-c16", "mlp-json-c16", 1.3,
        Unit.TIMES, legacy);
    ratio(Kind.TARGET, "identity gRPC / bare gRPC, c16 (h2load)", "identity-grpc-h2load-c16", "bare-grpc-h2load-c16",
        0.6, Unit.PERCENT, legacy);
    ratio(Kind.TARGET, "MLP gRPC / bare gRPC, c16 (h2load)", "mlp-grpc-h2load-c16", "bare-grpc-h2load-c16", 0.6,
        Unit.PERCENT, legacy);
    ratio(Kind.TARGET, "identity gRPC / bare gRPC, c16 (LoadGen)", "identity-grpc-c16", "bare-grpc-c16", 0.6,
        Unit.PERCENT, legacy);
    ratio(Kind.TARGET, "MLP gRPC / bare gRPC, c16 (LoadGen)", "mlp-grpc-c16", "bare-grpc-c16", 0.6, Unit.PERCENT,
        legacy);
    ratio(Kind.TARGET, "identity binary / identity JSON, c16", "identity-binary-c16", "identity-json-c16", 1.2,
        Unit.TIMES, legacy);
    ratio(Kind.TARGET, "MLP binary / MLP JSON, c16", "mlp-binary-c16", "mlp-json-c16", 1.2, Unit.TIMES, legacy);
    String cold = meta.getOrDefault("cold_duration", "5s");
    ratio(Kind.TARGET, "identity cold / steady, c16 (first " + cold + " after ready)", "identity-cold-c16",
        "identity-json-c16", 0.8, Unit.PERCENT, legacy);
    ratio(Kind.TARGET, "MLP cold / steady, c16 (first " + cold + " after ready)", "mlp-cold-c16", "mlp-json-c16", 0.8,
        Unit.PERCENT, legacy);
    // #28 (the pinned-core regression) was closed on lower numbers than the request-path issue's targets above:
    // they are floors that catch that regression again, listed as such and never in place of the targets.
    ratio(Kind.FLOOR_28, "#28 floor: identity JSON / bare JSON, c16", "identity-json-c16", "bare-json-c16", 0.57,
        Unit.PERCENT, legacy);
    ratio(Kind.FLOOR_28, "#28 floor: identity JSON / bare JSON, c64", "identity-json-c64", "bare-json-c64", 0.57,
        Unit.PERCENT, legacy);
    ratio(Kind.FLOOR_28, "#28 floor: identity JSON c64 / identity JSON c16", "identity-json-c64", "identity-json-c16",
        1.0, Unit.TIMES, legacy);
    ratio(Kind.FLOOR_28, "#28 floor: MLP JSON / bare JSON, c16", "mlp-json-c16", "bare-json-c16", 0.3, Unit.PERCENT,
        legacy);
  }

  private static int roundNumber(Path p) {
    Matcher m = ROUND_DIR.matcher(p.getFileName().toString());
    return m.matches() ? Integer.parseInt(m.group(1)) : 0;
  }

  private Leaf leaf(String label, int round, Path d, boolean legacy) throws IOException {
    Map<String, String> notes = keyValues(d.resolve("round.txt"));
    if (legacy) {
      // Before rounds: the load before each run and the ready times were lines of meta.txt.
      meta.forEach((k, v) -> {
        if (k.startsWith("loadavg_before_")) {
          notes.putIfAbsent("load." + k.substring("loadavg_before_".length()), v);
        }
      });
    }
    Map<String, Measurement> runs = new LinkedHashMap<>();
    for (Target t : TARGETS) {
      Measurement m = read(d, t.name());
      if (m != null) {
        runs.put(t.name(), m);
      }
    }
    return new Leaf(label, round, d, notes, runs);
  }

  /**
   * The checks judged from a pinned-scenario folder, in the order summary.md lists them: the request-path issue's
   * targets, then #28's floors.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static List<Check> checks(Path dir) throws IOException {
    return List.copyOf(new PinnedSummary(dir).checks);
  }

  /**
   * The pinned scenario's part of RESULTS.md: how it was measured, every check with each round's figures (both
   * measured in the same round), median, range, target and verdict, then every measurement.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static String resultsSection(Path dir) throws IOException {
    return new PinnedSummary(dir).section();
  }

  /**
   * The markdown summary of a pinned-scenario folder ({@code summary.md}).
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static String markdown(Path dir) throws IOException {
    return new PinnedSummary(dir).render();
  }

  /**
   * The HTML report of a pinned-scenario folder ({@code index.html}): every check with Kiln's figure and its limit's
   * side by side, round by round, then every measurement.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  public static String html(Path dir) throws IOException {
    return new PinnedSummary(dir).renderHtml();
  }

  private static Measurement read(Path d, String name) throws IOException {
    Path wrk = d.resolve(name + ".wrk.txt");
    Path json = d.resolve(name + ".json");
    Path h2load = d.resolve(name + ".h2load.txt");
    if (Files.isRegularFile(h2load)) {
      H2loadOutput h;
      try {
        h = H2loadOutput.parse(Files.readString(h2load));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(h2load + ": " + e.getMessage(), e);
      }
      // h2load prints the mean request time, no percentiles: the mean goes in the p50 column, marked.
      return new Measurement(name, "h2load (mean)", h.requestsPerSecond(), h.meanMs(), Double.NaN, h.errors());
    }
    if (Files.isRegularFile(wrk)) {
      WrkOutput w;
      try {
        w = WrkOutput.parse(Files.readString(wrk));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(wrk + ": " + e.getMessage(), e);
      }
      return new Measurement(name, "wrk", w.requestsPerSecond(), w.p(50), w.p(99), w.errors());
    }
    if (Files.isRegularFile(json)) {
      RunResult r = Reports.readJson(json);
      return new Measurement(name, "LoadGen", r.achievedRps(), r.latencyMs().p50(), r.latencyMs().p99(), r.errors());
    }
    return null;
  }

  // ------------------------------------------------------------------ the checks

  private void ratio(Kind kind, String label, String run, String base, double target, Unit unit, String legacy) {
    RoundVerdict.Target t = new RoundVerdict.Target(Direction.AT_LEAST, target, unit);
    List<Cell> cells = new ArrayList<>();
    List<Double> runStarts = new ArrayList<>();
    List<Double> baseStarts = new ArrayList<>();
    for (Leaf l : leaves) {
      Measurement a = l.runs().get(run);
      Measurement b = l.runs().get(base);
      if (a == null || b == null) {
        continue;
      }
      String problem = problem(a, b);
      cells.add(new Cell(l, a, b, problem != null ? Round.failed(l.label(), problem) : Round.of(l.label(),
          a.rps() / b.rps())));
      runStarts.add(l.start(run));
      baseStarts.add(l.start(base));
    }
    if (cells.isEmpty()) {
      boolean hasRun = leaves.stream().anyMatch(l -> l.runs().containsKey(run));
      boolean hasBase = leaves.stream().anyMatch(l -> l.runs().containsKey(base));
      String what = !hasRun ? run : !hasBase ? base : run + " and " + base + " in no common round";
      checks.add(new Check(label, kind, run, base, RoundVerdict.notMeasured(t, what), List.of()));
      return;
    }
    boolean interleaved = rounds && RoundVerdict.interleaved(runStarts, baseStarts);
    String why = !rounds ? legacy : interleaved ? null
        : "the rounds' start times (round.txt) do not show " + base + " measured again in every round, alternating with "
            + run;
    checks.add(new Check(label, kind, run, base, RoundVerdict.judge(cells.stream().map(Cell::round).toList(), t,
        interleaved, why), List.copyOf(cells)));
  }

  private void p99(Kind kind, String label, String run, double maxMs) {
    RoundVerdict.Target t = new RoundVerdict.Target(Direction.AT_MOST, maxMs, Unit.MS);
    List<Cell> cells = new ArrayList<>();
    for (Leaf l : leaves) {
      Measurement a = l.runs().get(run);
      if (a == null) {
        continue;
      }
      String problem = problem(a);
      if (problem == null && !Double.isFinite(a.p99())) {
        problem = run + " has no p99 (" + a.client() + ")";
      }
      cells.add(new Cell(l, a, null, problem != null ? Round.failed(l.label(), problem) : Round.of(l.label(), a.p99())));
    }
    if (cells.isEmpty()) {
      checks.add(new Check(label, kind, run, null, RoundVerdict.notMeasured(t, run), List.of()));
      return;
    }
    // An absolute figure has no limit to alternate with: its rounds only need to be rounds.
    checks.add(new Check(label, kind, run, null, RoundVerdict.judge(cells.stream().map(Cell::round).toList(), t, true,
        null), List.copyOf(cells)));
  }

  private static String problem(Measurement... inputs) {
    List<String> bad = new ArrayList<>();
    for (Measurement m : inputs) {
      if (m.errors() > 0) {
        bad.add(m.name() + " had " + m.errors() + " errors");
      } else if (!(m.rps() > 0)) {
        bad.add(m.name() + " answered no requests"); // a stalled server: no ratio to take
      }
    }
    return bad.isEmpty() ? null : String.join(", ", bad);
  }

  // ------------------------------------------------------------------ rendering

  private String render() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append("# Pinned benchmark: the request path at the hardware limit\n\n");
    line(sb, "command", m("command"));
    line(sb, "commit", m("git"));
    line(sb, "machine", m("cpu_model") + ", " + m("cpus") + " CPUs, " + m("memory") + ", " + m("os"));
    line(sb, "pinning", "servers on CPU " + m("server_cpu") + ", clients (wrk -t1, h2load, LoadGen) on CPU "
        + m("client_cpu") + " (taskset)");
    line(sb, "rounds", roundsText());
    line(sb, "tools", m("wrk") + "; " + m("java"));
    line(sb, "per measurement", m("duration") + "; warm-up: " + m("warm_rule"));
    line(sb, "load average", "start " + m("loadavg_start") + ", end " + m("loadavg_end"));
    sb.append('\n');
    checksTable(sb);
    targets(sb);
    notes(sb);
    return sb.toString();
  }

  private String section() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append("- pinning: servers on CPU ").append(m("server_cpu")).append(", clients (wrk -t1, h2load, LoadGen) on CPU ")
        .append(m("client_cpu")).append(" (taskset); tools: ").append(m("wrk")).append('\n');
    sb.append("- rounds: ").append(roundsText()).append('\n');
    sb.append("- per measurement: ").append(m("duration")).append("; every JVM warmed first: ").append(m("warm_rule"))
        .append('\n');
    sb.append("- limits: bare Vert.x HTTP (the same OIP JSON parse + encode) and bare gRPC (the same protobuf work)"
        + (rounds ? ", measured again in every round next to Kiln" : ", measured once in the run") + "\n\n");
    checksTable(sb);
    targets(sb);
    notes(sb);
    return sb.toString();
  }

  private String roundsText() {
    if (!rounds) {
      return "**one run of each, not rounds** (a folder from before the rounds rule): no check here can have a "
          + "verdict, every one is \"insufficient rounds\"";
    }
    int n = leaves.stream().mapToInt(Leaf::round).max().orElse(0);
    return n + " (" + m("interleaving") + ")";
  }

  private void checksTable(StringBuilder sb) {
    sb.append("| check | kind | per round: measured / limit or baseline (same round) | median (range) | target | "
        + "verdict |\n|---|---|---|---|---:|---|\n");
    for (Check c : checks) {
      sb.append("| ").append(c.label()).append(" | ").append(c.kind().text()).append(" | ").append(perRound(c))
          .append(" | ").append(c.measured()).append(" | ").append(c.goal()).append(" | ")
          .append(c.judgement().markdown()).append(" |\n");
    }
    sb.append('\n');
  }

  private static String perRound(Check c) {
    if (c.cells().isEmpty()) {
      return "–";
    }
    List<String> parts = new ArrayList<>();
    Unit u = c.judgement().target().unit();
    for (Cell cell : c.cells()) {
      String value = cell.round().problem() != null ? "not usable" : u.format(cell.round().value());
      String figures = cell.b() == null
          ? (Double.isFinite(cell.a().p99()) ? String.format(Locale.ROOT, "p99 %.3f ms", cell.a().p99()) : "no p99")
          : String.format(Locale.ROOT, "%,.0f / %,.0f", cell.a().rps(), cell.b().rps());
      parts.add((c.cells().size() > 1 || !cell.leaf().label().equals("single run") ? cell.leaf().label() + ": " : "")
          + figures + (cell.b() == null ? "" : " = " + value));
    }
    return String.join("; ", parts);
  }

  private void targets(StringBuilder sb) throws IOException {
    sb.append("| round | target | what | client | req/s | p50 ms | p99 ms | errors | load before | warm-up (req/s per "
        + "round) |\n|---|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for (Leaf l : leaves) {
      Set<String> warmShown = new HashSet<>();
      for (Target t : TARGETS) {
        Measurement m = l.runs().get(t.name());
        if (m == null) {
          if (!rounds) {
            sb.append("| ").append(l.label()).append(" | ").append(t.name()).append(" | ").append(t.what())
                .append(" | | not measured | | | | | |\n");
          }
          continue;
        }
        String warm = t.name().contains("-cold-") ? "none: cold by design"
            : warmShown.add(t.warmTarget()) ? warmUp(l, t.warmTarget()) : "as above";
        sb.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %.0f | %.3f | %s | %d | %s | %s |%n", l.label(),
            t.name(), t.what(), m.client(), m.rps(), m.p50(),
            Double.isNaN(m.p99()) ? "–" : String.format(Locale.ROOT, "%.3f", m.p99()), m.errors(),
            l.notes().getOrDefault("load." + t.name(), ""), warm));
      }
    }
    sb.append('\n');
  }

  private void notes(StringBuilder sb) {
    for (Leaf l : leaves) {
      if (l.notes().containsKey("ready_s")) {
        sb.append("- ").append(l.label()).append(": ready ").append(l.notes().get("ready_s"))
            .append(" s after `kiln up` started (polled every 50 ms); its cold run began right after.\n");
      }
    }
    for (String model : new String[] {"identity", "mlp"}) {
      if (meta.containsKey("ready_s_" + model)) {
        sb.append("- ").append(model).append(": ready ").append(meta.get("ready_s_" + model))
            .append(" s after `kiln up` started (polled every 50 ms); the cold run began right after.\n");
      }
    }
    sb.append("- Verdicts (RoundVerdict): at least ").append(RoundVerdict.MIN_ROUNDS).append(" rounds, each with its "
        + "own limit measured next to Kiln's run (the start times in each round's round.txt must show the rounds "
        + "alternating), else \"insufficient rounds\"; \"met\" only when every round meets the target (so the median "
        + "does), \"unstable\" when the range straddles it, \"missed\" when no round meets it; a round with errors "
        + "leaves the check \"not judged\". The kind column tells the request-path issue's targets from #28's "
        + "floors, which are lower and never replace them.\n");
    sb.append("- JSON and binary runs are wrk (one thread, closed loop, N connections). gRPC runs twice: h2load "
        + "(nghttp2's native HTTP/2 client, one thread, one connection, N concurrent streams, the framed "
        + "ModelInferRequest of GrpcRequestFile; it prints a mean, no percentiles, and counts HTTP 2xx, so a single "
        + "call is checked for grpc-status 0 first) and LoadGen (Java, N streams), which costs more client CPU per "
        + "request: LoadGen's gRPC rows compare only with LoadGen's bare gRPC row.\n");
    sb.append("- \"load before\": the 1-minute load average just before the run. This scenario accounts for about "
        + "2 of it (one busy server core, one busy client core); more means other processes shared the cores.\n");
    sb.append("- Ratios are of req/s; \"missed by\" is how far the median is from the target.\n");
  }

  private String renderHtml() throws IOException {
    StringBuilder b = new StringBuilder();
    b.append("<h2>Checks: Kiln and its limit, side by side, round by round</h2>\n<table>\n<tr><th class=\"l\">check</th>"
        + "<th class=\"l\">kind</th><th class=\"l\">round</th><th>Kiln (or measured)</th><th>limit or baseline, same "
        + "round</th><th>value</th><th>median</th><th>range</th><th>target</th><th class=\"l\">verdict</th></tr>\n");
    for (Check c : checks) {
      Unit u = c.judgement().target().unit();
      int span = Math.max(1, c.cells().size());
      String cls = switch (c.judgement().status()) {
        case MET -> "ok";
        case MISSED, UNSTABLE -> "bad";
        default -> "";
      };
      boolean first = true;
      List<Cell> cells = c.cells().isEmpty() ? java.util.Collections.singletonList(null) : c.cells();
      for (Cell cell : cells) {
        b.append("<tr>");
        if (first) {
          b.append("<td class=\"l\" rowspan=\"").append(span).append("\">").append(Html.escape(c.label()))
              .append("</td><td class=\"l\" rowspan=\"").append(span).append("\">").append(Html.escape(c.kind().text()))
              .append("</td>");
        }
        if (cell == null) {
          b.append("<td class=\"l\">–</td><td>–</td><td>–</td><td>–</td>");
        } else {
          b.append("<td class=\"l\">").append(Html.escape(cell.leaf().label())).append("</td><td>")
              .append(Html.escape(figure(cell.a(), cell.b() == null))).append("</td><td>")
              .append(cell.b() == null ? "–" : Html.escape(figure(cell.b(), false))).append("</td><td>")
              .append(cell.round().problem() != null ? Html.escape(cell.round().problem())
                  : Html.escape(u.format(cell.round().value()))).append("</td>");
        }
        if (first) {
          Judgement j = c.judgement();
          b.append("<td rowspan=\"").append(span).append("\">").append(j.values().isEmpty() ? "–"
                  : Html.escape(u.format(j.median()))).append("</td><td rowspan=\"").append(span).append("\">")
              .append(j.values().size() < 2 ? "–" : Html.escape(u.format(j.min()) + " – " + u.format(j.max())))
              .append("</td><td rowspan=\"").append(span).append("\">").append(Html.escape(c.goal()))
              .append("</td><td class=\"l ").append(cls).append("\" rowspan=\"").append(span).append("\">")
              .append(Html.escape(j.verdict())).append("</td>");
          first = false;
        }
        b.append("</tr>\n");
      }
    }
    b.append("</table>\n<h2>Every measurement</h2>\n<table>\n<tr><th class=\"l\">round</th><th class=\"l\">target</th>"
        + "<th class=\"l\">what</th><th class=\"l\">client</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th>"
        + "<th>errors</th><th>load before</th></tr>\n");
    for (Leaf l : leaves) {
      for (Target t : TARGETS) {
        Measurement m = l.runs().get(t.name());
        if (m != null) {
          b.append(String.format(Locale.ROOT, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s"
                  + "</td><td class=\"l\">%s</td><td>%,.0f</td><td>%.3f</td><td>%s</td><td>%d</td><td>%s</td></tr>%n",
              Html.escape(l.label()), Html.escape(t.name()), Html.escape(t.what()), Html.escape(m.client()), m.rps(),
              m.p50(), Double.isNaN(m.p99()) ? "–" : String.format(Locale.ROOT, "%.3f", m.p99()), m.errors(),
              Html.escape(l.notes().getOrDefault("load." + t.name(), ""))));
        }
      }
    }
    b.append("</table>\n<p class=\"note\">").append(Html.escape("Command: " + m("command") + ". Commit " + m("git")
        + ", " + m("cpu_model") + " × " + m("cpus") + ", " + m("os") + ". Rounds: " + roundsText().replace("**", "")
        + ". The raw outputs (wrk, h2load, LoadGen) are in this folder, one round-N/TARGET/ folder per round."))
        .append("</p>\n");
    return Html.document("Pinned benchmark: the request path at the hardware limit",
        "Kiln against the bare servers measured in the same rounds; verdicts need " + RoundVerdict.MIN_ROUNDS
            + " interleaved rounds", b.toString());
  }

  private static String figure(Measurement m, boolean p99) {
    return p99 ? String.format(Locale.ROOT, "p99 %s (%s)", Double.isFinite(m.p99())
        ? String.format(Locale.ROOT, "%.3f ms", m.p99()) : "–", m.name())
        : String.format(Locale.ROOT, "%,.0f req/s (%s, %s)", m.rps(), m.name(), m.client().replace(" (mean)", ", mean"));
  }

  /** {@code TARGET.warm.txt} of the round, else of the run: lines {@code round N RPS}, then {@code flat yes|no}. */
  private String warmUp(Leaf l, String target) throws IOException {
    Path f = l.dir().resolve(target + ".warm.txt");
    if (!Files.isRegularFile(f)) {
      f = dir.resolve(target + ".warm.txt");
      if (!Files.isRegularFile(f)) {
        return "no record";
      }
    }
    List<String> warm = new ArrayList<>();
    String flat = null;
    for (String line : Files.readAllLines(f)) {
      String[] w = line.trim().split("\\s+");
      if (w.length == 3 && w[0].equals("round")) {
        warm.add(String.format(Locale.ROOT, "%.0f", Double.parseDouble(w[2])));
      } else if (w.length == 2 && w[0].equals("flat")) {
        flat = w[1];
      }
    }
    String head = flat == null ? "unfinished" : flat.equals("yes") ? "flat after " + warm.size()
        : "**not flat** after " + warm.size();
    return head + ": " + String.join(", ", warm);
  }

  private String m(String key) {
    return meta.getOrDefault(key, "?");
  }

  private static void line(StringBuilder sb, String key, String value) {
    sb.append("- **").append(key).append("**: ").append(value).append('\n');
  }

  private static Map<String, String> keyValues(Path file) throws IOException {
    Map<String, String> m = new LinkedHashMap<>();
    if (!Files.isRegularFile(file)) {
      return m;
    }
    for (String line : Files.readAllLines(file)) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        m.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
      }
    }
    return m;
  }

  /**
   * {@code PinnedSummary --dir DIR}: writes DIR/summary.md and DIR/index.html and prints the summary. Exits 2 on bad
   * arguments, 1 if the folder cannot be read or holds a wrk output of a failed run.
   */
  public static void main(String[] argv) {
    Path dir;
    try {
      CliArgs args = CliArgs.parse(argv, Set.of());
      if (!args.has("dir")) {
        throw new IllegalArgumentException("usage: PinnedSummary --dir loadtest/results/pinned-TIME");
      }
      dir = Path.of(args.string("dir", null));
      args.rejectUnused();
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    }
    try {
      PinnedSummary s = new PinnedSummary(dir);
      String md = s.render();
      Files.writeString(dir.resolve("summary.md"), md, StandardCharsets.UTF_8);
      Files.writeString(dir.resolve("index.html"), s.renderHtml(), StandardCharsets.UTF_8);
      System.out.print(md);
    } catch (IOException | IllegalArgumentException e) {
      System.err.println("failed: " + e.getMessage());
      System.exit(1);
    }
  }
}
