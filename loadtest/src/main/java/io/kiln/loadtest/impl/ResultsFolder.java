package io.kiln.loadtest.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.loadtest.Reports;
import io.kiln.loadtest.RunResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * One results folder written by {@code loadtest/run.sh} or a {@code bench-*.sh} script, read back:
 * {@code meta.txt} ({@code KEY=VALUE} lines, later lines win), the run summaries ({@code *.json} but the request
 * bodies {@code request*.json}), the
 * searches ({@code *.search.json}), {@code limits.txt} ({@code RUN LIMIT} lines) and {@code output.txt}
 * (a benchmark main's printout). Immutable once read; reading blocks on I/O.
 *
 * @param dir      the folder
 * @param meta     the folder's description; {@code finished} is present only when the script completed
 * @param runs     run summaries, in the order they started
 * @param searches max-throughput searches
 * @param limits   run name → the names of its limits, in file order
 * @param output   the benchmark's printout, or empty
 */
public record ResultsFolder(Path dir, Map<String, String> meta, List<RunResult> runs, List<Search> searches,
    Map<String, List<String>> limits, List<String> output) {

  private static final ObjectMapper JSON = new ObjectMapper();
  /** The meta key {@link #latestByScenario} sets on an older folder shown for some of its parts only. */
  static final String SHOWN_PARTS = "shown_parts";

  /** What the markdown needs of a max-throughput search. */
  public record Search(String name, double p99TargetMs, double bestRate, Double bestP99Ms, Double bestAchievedRps,
      int steps, String stoppedBecause) {
  }

  public boolean complete() {
    return meta.containsKey("finished");
  }

  public String scenario() {
    return meta.getOrDefault("scenario", "");
  }

  public String started() {
    return meta.getOrDefault("started", "");
  }

  public Optional<RunResult> run(String name) {
    return runs.stream().filter(r -> r.name().equals(name)).findFirst();
  }

  /**
   * The latest complete folder of every scenario under {@code results}, by scenario name.
   *
   * @throws IOException if a folder cannot be listed or a file in it cannot be read
   */
  public static Map<String, ResultsFolder> latestByScenario(Path results) throws IOException {
    Map<String, ResultsFolder> latest = new LinkedHashMap<>();
    if (!Files.isDirectory(results)) {
      return latest;
    }
    List<Path> dirs;
    try (Stream<Path> s = Files.list(results)) {
      dirs = s.filter(p -> Files.isRegularFile(p.resolve("meta.txt"))).sorted().toList();
    }
    List<ResultsFolder> folders = new ArrayList<>();
    for (Path d : dirs) {
      Map<String, String> meta = meta(d.resolve("meta.txt"));
      if (meta.containsKey("finished")) {
        folders.add(read(d));
      }
    }
    folders.sort(Comparator.comparing(ResultsFolder::started));
    // The latest folder of each part (a model a bench-*.sh run was limited to with MODELS="..."), so a run of one
    // model does not hide the latest figures of another. A scenario's newest folder keeps the scenario's name; an
    // older folder still latest for some of its parts is "<scenario> (<parts>)", shown for those parts only.
    Set<String> claimed = new HashSet<>();
    Set<String> seen = new HashSet<>();
    List<Map.Entry<String, ResultsFolder>> shown = new ArrayList<>();
    for (int i = folders.size() - 1; i >= 0; i--) {
      ResultsFolder f = folders.get(i);
      boolean newest = seen.add(f.scenario());
      List<String> parts = f.parts().stream().filter(part -> claimed.add(f.scenario() + "\0" + part)).toList();
      if (!parts.isEmpty()) {
        String name = newest ? f.scenario() : f.scenario() + " (" + String.join(" ", parts) + ")";
        shown.add(0, Map.entry(name, parts.size() == f.parts().size() ? f : f.shownFor(parts)));
      }
    }
    shown.forEach(e -> latest.put(e.getKey(), e.getValue()));
    return latest;
  }

  /** The parts this folder is shown for when a later folder measured its others (see {@link #latestByScenario}), or null. */
  public String shownParts() {
    return meta.get(SHOWN_PARTS);
  }

  /** This folder shown for {@code parts} of its own only ({@link #shownParts}). */
  private ResultsFolder shownFor(List<String> parts) {
    Map<String, String> m = new LinkedHashMap<>(meta);
    m.put(SHOWN_PARTS, String.join(" ", parts));
    return new ResultsFolder(dir, Map.copyOf(m), runs, searches, limits, output);
  }

  /** Its rounds table ({@link RoundsTable#read}), limited to the parts it is shown for when that is not all. */
  public RoundsTable roundsTable() throws IOException {
    RoundsTable t = RoundsTable.read(dir);
    String shown = shownParts();
    return shown == null ? t : t.onlyParts(List.of(shown.split(" ")));
  }

  /**
   * The parts of the scenario this folder measured: the models its command was limited to ({@code MODELS="a b"}),
   * or one unnamed part when it names none.
   */
  List<String> parts() {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("MODELS=\"([^\"]*)\"")
        .matcher(meta.getOrDefault("command", ""));
    return m.find() && !m.group(1).isBlank() ? List.of(m.group(1).trim().split("\\s+")) : List.of("");
  }

  /** Reads one folder. */
  public static ResultsFolder read(Path dir) throws IOException {
    Map<String, String> meta = meta(dir.resolve("meta.txt"));
    List<RunResult> runs = new ArrayList<>();
    List<Search> searches = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      // request*.json are the request bodies a scenario sent (tensor_request in run.sh), not run summaries.
      files = s.filter(p -> p.getFileName().toString().endsWith(".json")
          && !p.getFileName().toString().startsWith("request")).sorted().toList();
    }
    for (Path f : files) {
      if (f.getFileName().toString().endsWith(".search.json")) {
        searches.add(search(f));
      } else {
        runs.add(Reports.readJson(f));
      }
    }
    runs.sort(Comparator.comparing(ResultsFolder::startedAt));
    Map<String, List<String>> limits = new LinkedHashMap<>();
    Path lf = dir.resolve("limits.txt");
    if (Files.isRegularFile(lf)) {
      for (String line : Files.readAllLines(lf)) {
        String[] parts = line.trim().split("\\s+");
        if (parts.length == 2) {
          limits.computeIfAbsent(parts[0], k -> new ArrayList<>()).add(parts[1]);
        }
      }
    }
    Path out = dir.resolve("output.txt");
    List<String> output = Files.isRegularFile(out) ? Files.readAllLines(out) : List.of();
    return new ResultsFolder(dir, meta, List.copyOf(runs), List.copyOf(searches), limits, output);
  }

  /** When the run started; a run without a readable time sorts first. */
  private static java.time.Instant startedAt(RunResult r) {
    try {
      return r.startedAt() == null ? java.time.Instant.EPOCH : java.time.Instant.parse(r.startedAt());
    } catch (java.time.format.DateTimeParseException e) {
      return java.time.Instant.EPOCH;
    }
  }

  static Map<String, String> meta(Path file) throws IOException {
    Map<String, String> m = new LinkedHashMap<>();
    for (String line : Files.readAllLines(file)) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        m.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
      }
    }
    return m;
  }

  private static Search search(Path file) throws IOException {
    if (Files.size(file) > Reports.MAX_JSON_BYTES) {
      throw new IOException(file + " is larger than " + Reports.MAX_JSON_BYTES + " bytes");
    }
    JsonNode j = JSON.readTree(file.toFile());
    JsonNode best = j.path("best");
    boolean hasBest = best.isObject();
    return new Search(j.path("name").asText(), j.path("options").path("p99TargetMs").asDouble(),
        j.path("bestRate").asDouble(), hasBest ? best.path("latencyMs").path("p99").asDouble() : null,
        hasBest ? best.path("achievedRps").asDouble() : null, j.path("steps").size(), j.path("stoppedBecause").asText());
  }
}
