package io.kiln.loadtest;

import io.kiln.loadtest.PinnedFolder.Leaf;
import io.kiln.loadtest.PinnedFolder.Measurement;
import io.kiln.loadtest.PinnedFolder.Target;
import io.kiln.loadtest.PinnedFolder.WarmUp;
import io.kiln.loadtest.PinnedSummary.Cell;
import io.kiln.loadtest.PinnedSummary.Check;
import io.kiln.loadtest.impl.RoundVerdict;
import io.kiln.loadtest.impl.RoundVerdict.Unit;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The pinned scenario in markdown: {@code summary.md} and its part of RESULTS.md, both a table of the checks with each
 * round's figures, a table of every measurement with its warm-up, and notes on how it was measured. Reads the warm-up
 * records as it renders (blocking file I/O); use an instance once, on one thread.
 */
final class PinnedMarkdown {

  private final PinnedFolder folder;
  private final List<Check> checks;

  PinnedMarkdown(PinnedFolder folder, List<Check> checks) {
    this.folder = folder;
    this.checks = checks;
  }

  /**
   * {@code summary.md}.
   *
   * @throws IOException if a warm-up record cannot be read
   */
  String summary() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append("# Pinned benchmark: the request path at the hardware limit\n\n");
    line(sb, "command", m("command"));
    line(sb, "commit", m("git"));
    line(sb, "machine", m("cpu_model") + ", " + m("cpus") + " CPUs, " + m("memory") + ", " + m("os"));
    line(sb, "pinning", "servers on CPU " + m("server_cpu") + ", clients (wrk -t1, h2load, LoadGen) on CPU "
        + m("client_cpu") + " (taskset)");
    line(sb, "rounds", roundsText(folder));
    line(sb, "tools", m("wrk") + "; " + m("java"));
    line(sb, "per measurement", m("duration") + "; warm-up: " + m("warm_rule"));
    line(sb, "load average", "start " + m("loadavg_start") + ", end " + m("loadavg_end"));
    sb.append('\n');
    checksTable(sb);
    targets(sb);
    notes(sb);
    return sb.toString();
  }

  /**
   * The pinned scenario's part of RESULTS.md: summary.md without its title and run details, which RESULTS.md gives for
   * every scenario alike.
   *
   * @throws IOException if a warm-up record cannot be read
   */
  String resultsSection() throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append("- pinning: servers on CPU ").append(m("server_cpu")).append(", clients (wrk -t1, h2load, LoadGen) on CPU ")
        .append(m("client_cpu")).append(" (taskset); tools: ").append(m("wrk")).append('\n');
    sb.append("- rounds: ").append(roundsText(folder)).append('\n');
    sb.append("- per measurement: ").append(m("duration")).append("; every JVM warmed first: ").append(m("warm_rule"))
        .append('\n');
    sb.append("- limits: bare Vert.x HTTP (the same OIP JSON parse + encode) and bare gRPC (the same protobuf work)"
        + (folder.hasRounds() ? ", measured again in every round next to Kiln" : ", measured once in the run") + "\n\n");
    checksTable(sb);
    targets(sb);
    notes(sb);
    return sb.toString();
  }

  /** How many rounds and how they alternate, or, loudly, that the folder predates rounds. Markdown: {@code **}. */
  static String roundsText(PinnedFolder folder) {
    if (!folder.hasRounds()) {
      return "**one run of each, not rounds** (a folder from before the rounds rule): no check here can have a "
          + "verdict, every one is \"insufficient rounds\"";
    }
    int n = folder.leaves().stream().mapToInt(Leaf::round).max().orElse(0);
    return n + " (" + folder.meta("interleaving") + ")";
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
    for (Leaf l : folder.leaves()) {
      Set<String> warmShown = new HashSet<>();
      for (Target t : PinnedFolder.TARGETS) {
        Measurement m = l.runs().get(t.name());
        if (m == null) {
          if (!folder.hasRounds()) {
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

  /** {@code flat after 3: 40000, 58000, 59000}, {@code **not flat** after 8: ...}, or {@code no record}. */
  private String warmUp(Leaf l, String target) throws IOException {
    WarmUp w = folder.warmUp(l, target);
    if (w == null) {
      return "no record";
    }
    String head = !w.finished() ? "unfinished" : w.flat() ? "flat after " + w.rps().size()
        : "**not flat** after " + w.rps().size();
    return head + ": " + w.rps().stream().map(r -> String.format(Locale.ROOT, "%.0f", r))
        .collect(Collectors.joining(", "));
  }

  private void notes(StringBuilder sb) {
    for (Leaf l : folder.leaves()) {
      if (l.notes().containsKey("ready_s")) {
        sb.append("- ").append(l.label()).append(": ready ").append(l.notes().get("ready_s"))
            .append(" s after `kiln up` started (polled every 50 ms); its cold run began right after.\n");
      }
    }
    for (String model : new String[] {"identity", "mlp"}) {
      String ready = folder.meta("ready_s_" + model, null);
      if (ready != null) {
        sb.append("- ").append(model).append(": ready ").append(ready)
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

  private String m(String key) {
    return folder.meta(key);
  }

  private static void line(StringBuilder sb, String key, String value) {
    sb.append("- **").append(key).append("**: ").append(value).append('\n');
  }
}
