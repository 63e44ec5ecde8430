package io.kiln.loadtest;

import io.kiln.loadtest.impl.CliArgs;
import io.kiln.loadtest.impl.H2loadOutput;
import io.kiln.loadtest.impl.WrkOutput;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The summary of one {@code loadtest/run.sh pinned} folder ({@code summary.md}): every target's throughput,
 * p50 and p99 as the tools printed them, and the ratios the "request path at the hardware limit" targets are
 * stated in, each "met" or "missed by X". Reads only what the scenario wrote: {@code NAME.wrk.txt} (wrk
 * {@code --latency} output), {@code NAME.json} (LoadGen run summaries, for gRPC), {@code NAME.warm.txt}
 * (the warm-up rounds) and {@code meta.txt}. A target that was not measured shows as such; a check over a
 * run with errors is not judged.
 */
public final class PinnedSummary {

  /** A measured target: {@code NAME.wrk.txt} or {@code NAME.json}, and what it is. */
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

  /** One measured target, from wrk or LoadGen. */
  record Measurement(String name, String client, double rps, double p50, double p99, long errors) {
  }

  /**
   * One of the targets, judged.
   *
   * @param label    what is compared, e.g. {@code identity JSON / bare JSON, c16}
   * @param run      the measured target's name
   * @param base     the limit's (or baseline's) name, measured in the same run; {@code null} for a p99 bound
   * @param measured the measured value as the target is stated: {@code 49 %}, {@code 0.93×}, {@code 3.720 ms}; empty
   *                 when not measured
   * @param goal     the target, e.g. {@code ≥ 70 %}
   * @param verdict  {@code met}, {@code missed by …}, {@code not measured (…)} or {@code not judged: …}
   */
  public record Check(String label, String run, String base, String measured, String goal, String verdict) {
    public boolean met() {
      return verdict.equals("met");
    }
  }

  private final Path dir;
  private final Map<String, String> meta;
  private final Map<String, Measurement> runs = new LinkedHashMap<>();
  private final List<Check> checks = new ArrayList<>();

  private PinnedSummary(Path dir) throws IOException {
    this.dir = dir;
    this.meta = meta(dir.resolve("meta.txt"));
    for (Target t : TARGETS) {
      Measurement m = read(t.name());
      if (m != null) {
        runs.put(t.name(), m);
      }
    }
    for (int c : new int[] {1, 16, 64}) {
      ratio("identity JSON / bare JSON, c" + c, "identity-json-c" + c, "bare-json-c" + c, c == 1 ? 0.5 : 0.7, true);
    }
    ratio("MLP JSON / bare JSON, c16", "mlp-json-c16", "bare-json-c16", 0.5, true);
    p99("MLP JSON p99, c16", "mlp-json-c16", 2.0);
    // gRPC against JSON with native clients on both sides (h2load, wrk); LoadGen's gRPC rows compare only with
    // LoadGen's bare gRPC row.
    ratio("identity gRPC (h2load) / identity JSON (wrk), c16", "identity-grpc-h2load-c16", "identity-json-c16", 1.3,
        false);
    ratio("MLP gRPC (h2load) / MLP JSON (wrk), c16", "mlp-grpc-h2load-c16", "mlp-json-c16", 1.3, false);
    ratio("identity gRPC / bare gRPC, c16 (h2load)", "identity-grpc-h2load-c16", "bare-grpc-h2load-c16", 0.6, true);
    ratio("MLP gRPC / bare gRPC, c16 (h2load)", "mlp-grpc-h2load-c16", "bare-grpc-h2load-c16", 0.6, true);
    ratio("identity gRPC / bare gRPC, c16 (LoadGen)", "identity-grpc-c16", "bare-grpc-c16", 0.6, true);
    ratio("MLP gRPC / bare gRPC, c16 (LoadGen)", "mlp-grpc-c16", "bare-grpc-c16", 0.6, true);
    ratio("identity binary / identity JSON, c16", "identity-binary-c16", "identity-json-c16", 1.2, false);
    ratio("MLP binary / MLP JSON, c16", "mlp-binary-c16", "mlp-json-c16", 1.2, false);
    String cold = meta.getOrDefault("cold_duration", "5s");
    ratio("identity cold / steady, c16 (first " + cold + " after ready)", "identity-cold-c16", "identity-json-c16", 0.8,
        true);
    ratio("MLP cold / steady, c16 (first " + cold + " after ready)", "mlp-cold-c16", "mlp-json-c16", 0.8, true);
  }

  /**
   * The targets judged from a pinned-scenario folder, in the order summary.md lists them.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk output is not one of a completed {@code --latency} run
   */
  public static List<Check> checks(Path dir) throws IOException {
    return List.copyOf(new PinnedSummary(dir).checks);
  }

  /**
   * The pinned scenario's part of RESULTS.md: how it was measured, every target, and every check with the
   * figures it compares (both measured in this folder's run), the target and the verdict.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk output is not one of a completed {@code --latency} run
   */
  public static String resultsSection(Path dir) throws IOException {
    return new PinnedSummary(dir).section();
  }

  /**
   * The markdown summary of a pinned-scenario folder.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk output is not one of a completed {@code --latency} run
   */
  public static String markdown(Path dir) throws IOException {
    return new PinnedSummary(dir).render();
  }

  private Measurement read(String name) throws IOException {
    Path wrk = dir.resolve(name + ".wrk.txt");
    Path json = dir.resolve(name + ".json");
    Path h2load = dir.resolve(name + ".h2load.txt");
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

  private String render() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append("# Pinned benchmark: the request path at the hardware limit\n\n");
    line(sb, "command", m("command"));
    line(sb, "commit", m("git"));
    line(sb, "machine", m("cpu_model") + ", " + m("cpus") + " CPUs, " + m("memory") + ", " + m("os"));
    line(sb, "pinning", "servers on CPU " + m("server_cpu") + ", clients (wrk -t1, LoadGen) on CPU " + m("client_cpu")
        + " (taskset); one server measured at a time");
    line(sb, "tools", m("wrk") + "; " + m("java"));
    line(sb, "per measurement", m("duration") + "; warm-up: " + m("warm_rule"));
    line(sb, "load average", "start " + m("loadavg_start") + ", end " + m("loadavg_end"));
    sb.append('\n');
    targets(sb);
    sb.append("| check | measured | target | verdict |\n|---|---:|---:|---|\n");
    for (Check c : checks) {
      sb.append("| ").append(c.label()).append(" | ").append(c.measured().isEmpty() ? "" : c.measured() + " ")
          .append("| ").append(c.goal()).append(" | ").append(c.verdict()).append(" |\n");
    }
    sb.append('\n');
    notes(sb);
    return sb.toString();
  }

  private String section() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append("- pinning: servers on CPU ").append(m("server_cpu")).append(", clients (wrk -t1, h2load, LoadGen) on CPU ")
        .append(m("client_cpu")).append(" (taskset); one server at a time; tools: ").append(m("wrk")).append('\n');
    sb.append("- per measurement: ").append(m("duration")).append("; every JVM warmed first: ").append(m("warm_rule"))
        .append('\n');
    sb.append("- limits measured in this same run: bare Vert.x HTTP (the same OIP JSON parse + encode) and bare gRPC "
        + "(the same protobuf work)\n\n");
    sb.append("| check | measured | limit or baseline (same run) | ratio | issue's target | verdict |\n")
        .append("|---|---|---|---:|---:|---|\n");
    for (Check c : checks) {
      Measurement a = runs.get(c.run());
      Measurement b = c.base() == null ? null : runs.get(c.base());
      boolean latency = c.base() == null;
      sb.append("| ").append(c.label()).append(" | ").append(figure(c.run(), a, latency)).append(" | ")
          .append(latency ? "–" : figure(c.base(), b, false)).append(" | ").append(c.measured().isEmpty() ? "–"
              : c.measured()).append(" | ").append(c.goal()).append(" | ")
          .append(c.met() ? "met" : c.verdict().startsWith("missed") ? "**" + c.verdict() + "**" : c.verdict())
          .append(" |\n");
    }
    sb.append('\n');
    targets(sb);
    notes(sb);
    return sb.toString();
  }

  private static String figure(String name, Measurement m, boolean p99) {
    if (m == null) {
      return "not measured (" + name + ")";
    }
    return p99 ? String.format(Locale.ROOT, "p99 %.3f ms (%s)", m.p99(), name)
        : String.format(Locale.ROOT, "%,.0f req/s (%s, %s)", m.rps(), name,
            m.client().replace(" (mean)", ", mean"));
  }

  private void targets(StringBuilder sb) throws IOException {
    sb.append("| target | what | client | req/s | p50 ms | p99 ms | errors | load before | warm-up (req/s per round) |\n");
    sb.append("|---|---|---|---:|---:|---:|---:|---:|---|\n");
    Set<String> warmShown = new java.util.HashSet<>();
    for (Target t : TARGETS) {
      Measurement m = runs.get(t.name());
      if (m == null) {
        sb.append("| ").append(t.name()).append(" | ").append(t.what()).append(" | | not measured | | | | | |\n");
        continue;
      }
      String warm = t.name().contains("-cold-") ? "none: cold by design"
          : warmShown.add(t.warmTarget()) ? warmUp(t.warmTarget()) : "as above";
      sb.append(String.format(Locale.ROOT, "| %s | %s | %s | %.0f | %.3f | %s | %d | %s | %s |%n", t.name(), t.what(),
          m.client(), m.rps(), m.p50(), Double.isNaN(m.p99()) ? "–" : String.format(Locale.ROOT, "%.3f", m.p99()),
          m.errors(), meta.getOrDefault("loadavg_before_" + t.name(), ""), warm));
    }
    sb.append('\n');
  }

  private void notes(StringBuilder sb) {
    for (String model : new String[] {"identity", "mlp"}) {
      if (meta.containsKey("ready_s_" + model)) {
        sb.append("- ").append(model).append(": ready ").append(meta.get("ready_s_" + model))
            .append(" s after `kiln up` started (polled every 50 ms); the cold run began right after.\n");
      }
    }
    sb.append("- JSON and binary runs are wrk (one thread, closed loop, N connections). gRPC runs twice: h2load "
        + "(nghttp2's native HTTP/2 client, one thread, one connection, N concurrent streams, the framed "
        + "ModelInferRequest of GrpcRequestFile; it prints a mean, no percentiles, and counts HTTP 2xx, so a single "
        + "call is checked for grpc-status 0 first) and LoadGen (Java, N streams), which costs more client CPU per "
        + "request: LoadGen's gRPC rows compare only with LoadGen's bare gRPC row.\n");
    sb.append("- \"load before\": the 1-minute load average just before the run. This scenario accounts for about "
        + "2 of it (one busy server core, one busy client core); more means other processes shared the cores.\n");
    sb.append("- Ratios are of req/s; \"missed by\" is how far the ratio (or p99) is from its target.\n");
  }

  private void ratio(String label, String run, String base, double target, boolean percent) {
    Measurement a = runs.get(run);
    Measurement b = runs.get(base);
    String goal = percent ? String.format(Locale.ROOT, "≥ %.0f %%", target * 100) : String.format(Locale.ROOT, "≥ %.2f×", target);
    if (a == null || b == null) {
      checks.add(new Check(label, run, base, "", goal, "not measured (" + (a == null ? run : base) + ")"));
      return;
    }
    double r = a.rps() / b.rps();
    String measured = !Double.isFinite(r) ? "–" : percent ? String.format(Locale.ROOT, "%.0f %%", r * 100)
        : String.format(Locale.ROOT, "%.2f×", r);
    String miss = percent ? String.format(Locale.ROOT, "missed by %.0f points", (target - r) * 100)
        : String.format(Locale.ROOT, "missed by %.2f×", target - r);
    checks.add(new Check(label, run, base, measured, goal, verdict(r >= target, miss, a, b)));
  }

  private void p99(String label, String run, double maxMs) {
    Measurement a = runs.get(run);
    String goal = String.format(Locale.ROOT, "≤ %.1f ms", maxMs);
    if (a == null) {
      checks.add(new Check(label, run, null, "", goal, "not measured (" + run + ")"));
      return;
    }
    checks.add(new Check(label, run, null, String.format(Locale.ROOT, "%.3f ms", a.p99()), goal,
        verdict(a.p99() <= maxMs, String.format(Locale.ROOT, "missed by %.3f ms", a.p99() - maxMs), a)));
  }

  private static String verdict(boolean met, String miss, Measurement... inputs) {
    List<String> bad = new ArrayList<>();
    for (Measurement m : inputs) {
      if (m.errors() > 0) {
        bad.add(m.name() + " had " + m.errors() + " errors");
      } else if (!(m.rps() > 0)) {
        bad.add(m.name() + " answered no requests"); // a stalled server: no ratio to take
      }
    }
    if (!bad.isEmpty()) {
      return "not judged: " + String.join(", ", bad);
    }
    return met ? "met" : miss;
  }

  /** {@code TARGET.warm.txt}: lines {@code round N RPS}, then {@code flat yes|no}. */
  private String warmUp(String target) throws IOException {
    Path f = dir.resolve(target + ".warm.txt");
    if (!Files.isRegularFile(f)) {
      return "no record";
    }
    List<String> rounds = new ArrayList<>();
    String flat = null;
    for (String l : Files.readAllLines(f)) {
      String[] w = l.trim().split("\\s+");
      if (w.length == 3 && w[0].equals("round")) {
        rounds.add(String.format(Locale.ROOT, "%.0f", Double.parseDouble(w[2])));
      } else if (w.length == 2 && w[0].equals("flat")) {
        flat = w[1];
      }
    }
    String head = flat == null ? "unfinished" : flat.equals("yes") ? "flat after " + rounds.size()
        : "**not flat** after " + rounds.size();
    return head + ": " + String.join(", ", rounds);
  }

  private String m(String key) {
    return meta.getOrDefault(key, "?");
  }

  private static void line(StringBuilder sb, String key, String value) {
    sb.append("- **").append(key).append("**: ").append(value).append('\n');
  }

  private static Map<String, String> meta(Path file) throws IOException {
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
   * {@code PinnedSummary --dir DIR}: writes DIR/summary.md and prints it. Exits 2 on bad arguments, 1 if the
   * folder cannot be read or holds a wrk output of a failed run.
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
      String md = markdown(dir);
      Files.writeString(dir.resolve("summary.md"), md, StandardCharsets.UTF_8);
      System.out.print(md);
    } catch (IOException | IllegalArgumentException e) {
      System.err.println("failed: " + e.getMessage());
      System.exit(1);
    }
  }
}
