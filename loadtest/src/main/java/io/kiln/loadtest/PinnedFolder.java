package io.kiln.loadtest;

import io.kiln.loadtest.impl.H2loadOutput;
import io.kiln.loadtest.impl.WrkOutput;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A {@code loadtest/run.sh pinned} folder as read from disk, in the layout {@link PinnedSummary} describes: its
 * {@code meta.txt} and one {@link Leaf} per round and Kiln model, each with the measurements found in it. Only reads;
 * judging is {@link PinnedChecks}', rendering {@link PinnedMarkdown}'s and {@link PinnedHtml}'s. Reading blocks on file
 * I/O; once read, an instance does not change and may be shared.
 */
final class PinnedFolder {

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

  /**
   * A {@code TARGET.warm.txt}: the req/s of each warm-up round, whether its {@code flat} line was written (the warm-up
   * finished) and whether that line said {@code yes}.
   */
  record WarmUp(List<Double> rps, boolean finished, boolean flat) {
  }

  private static final Pattern ROUND_DIR = Pattern.compile("round-(\\d+)");

  private final Path dir;
  private final Map<String, String> meta;
  private final List<Leaf> leaves = new ArrayList<>();
  private final boolean rounds;

  private PinnedFolder(Path dir) throws IOException {
    this.dir = dir;
    this.meta = keyValues(dir.resolve("meta.txt"));
    List<Path> roundDirs = new ArrayList<>();
    if (Files.isDirectory(dir)) {
      try (Stream<Path> s = Files.list(dir)) {
        s.filter(p -> Files.isDirectory(p) && ROUND_DIR.matcher(p.getFileName().toString()).matches())
            .sorted(Comparator.comparingInt(PinnedFolder::roundNumber)).forEach(roundDirs::add);
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
  }

  /**
   * Reads a pinned-scenario folder; one that does not exist reads as a single run with nothing measured.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalArgumentException if a wrk or h2load output is not one of a completed run
   */
  static PinnedFolder read(Path dir) throws IOException {
    return new PinnedFolder(dir);
  }

  /** Whether the folder holds {@code round-N/} folders; if not, it was written before rounds existed. */
  boolean hasRounds() {
    return rounds;
  }

  /** Every round's leaves, in round order, then by model. */
  List<Leaf> leaves() {
    return Collections.unmodifiableList(leaves);
  }

  /** A {@code meta.txt} value, or {@code ?} (how the summaries show one the run did not record). */
  String meta(String key) {
    return meta(key, "?");
  }

  /** A {@code meta.txt} value, or {@code orElse}. */
  String meta(String key, String orElse) {
    return meta.getOrDefault(key, orElse);
  }

  /**
   * The warm-up record of {@code target} ({@code bare-json}, ...): the round's {@code TARGET.warm.txt}, else the run's
   * (the bare servers warm once, at the start), else {@code null}. Read only when asked for, since only summary.md shows
   * it: lines {@code round N RPS}, then {@code flat yes|no}.
   *
   * @throws IOException if the file cannot be read
   * @throws NumberFormatException if a round's req/s is not a number
   */
  WarmUp warmUp(Leaf l, String target) throws IOException {
    Path f = l.dir().resolve(target + ".warm.txt");
    if (!Files.isRegularFile(f)) {
      f = dir.resolve(target + ".warm.txt");
      if (!Files.isRegularFile(f)) {
        return null;
      }
    }
    List<Double> rps = new ArrayList<>();
    String flat = null;
    for (String line : Files.readAllLines(f)) {
      String[] w = line.trim().split("\\s+");
      if (w.length == 3 && w[0].equals("round")) {
        rps.add(Double.parseDouble(w[2]));
      } else if (w.length == 2 && w[0].equals("flat")) {
        flat = w[1];
      }
    }
    return new WarmUp(List.copyOf(rps), flat != null, "yes".equals(flat));
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
      Measurement m = measurement(d, t.name());
      if (m != null) {
        runs.put(t.name(), m);
      }
    }
    return new Leaf(label, round, d, notes, runs);
  }

  /** {@code NAME}'s run in {@code d}: h2load's output first, then wrk's, then LoadGen's summary; null if none. */
  private static Measurement measurement(Path d, String name) throws IOException {
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
}
