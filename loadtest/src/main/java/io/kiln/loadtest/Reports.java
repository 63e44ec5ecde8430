package io.kiln.loadtest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kiln.loadtest.impl.HtmlReports;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Writes and reads results: the JSON summary, and self-contained HTML reports (inline SVG charts, no
 * scripts, nothing fetched). Stateless and thread-safe; file methods block on I/O and create missing
 * parent directories.
 */
public final class Reports {
  private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
  /** Largest result file {@link #readJson} accepts. */
  public static final long MAX_JSON_BYTES = 64L << 20;

  private Reports() {
  }

  /**
   * One row of a scenario comparison. Ratios are run / baseline; NaN when the baseline value is 0.
   */
  public record ComparisonRow(RunResult run, double throughputRatio, double p50Ratio, double p99Ratio) {
  }

  /**
   * A run against its own limit: the baseline measured for the same load in the same session (e.g. the
   * bare HTTP server at the same concurrency, or direct model calls). Ratios are run / limit; NaN when the
   * limit's value is 0.
   */
  public record LimitRow(RunResult run, RunResult limit, double throughputRatio, double p50Ratio, double p99Ratio) {
  }

  /**
   * What a comparison page shows besides the runs.
   *
   * @param limitsOf run name → the names of the runs that are its limits (e.g. the HTTP limit and the compute
   *                 limit), in order
   * @param links    label → relative URL of related reports (each run's own page, searches), in order
   */
  public record ComparisonExtras(Map<String, List<String>> limitsOf, Map<String, String> links) {
    public static final ComparisonExtras NONE = new ComparisonExtras(Map.of(), Map.of());

    public ComparisonExtras {
      Map<String, List<String>> copy = new LinkedHashMap<>();
      limitsOf.forEach((k, v) -> copy.put(k, List.copyOf(v)));
      limitsOf = Collections.unmodifiableMap(copy);
      links = Collections.unmodifiableMap(new LinkedHashMap<>(links));
    }
  }

  public static String toJson(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  public static void writeJson(RunResult result, Path file) throws IOException {
    write(file, toJson(result));
  }

  public static void writeJson(MaxThroughputSearch.Result result, Path file) throws IOException {
    write(file, toJson(result));
  }

  /**
   * Reads a JSON summary written by {@link #writeJson(RunResult, Path)}.
   *
   * @throws IOException if unreadable, too large, or not a run summary
   */
  public static RunResult readJson(Path file) throws IOException {
    if (Files.size(file) > MAX_JSON_BYTES) {
      throw new IOException(file + " is larger than " + MAX_JSON_BYTES + " bytes");
    }
    RunResult r = MAPPER.readValue(file.toFile(), RunResult.class);
    if (r.name() == null || r.latencyMs() == null || r.latencyFrom() == null) {
      throw new IOException(file + " is not a load-test run summary");
    }
    return r;
  }

  /** The HTML report of one run. */
  public static String html(RunResult result) {
    return HtmlReports.run(result);
  }

  public static void writeHtml(RunResult result, Path file) throws IOException {
    write(file, html(result));
  }

  /** The HTML report of a max-throughput search. */
  public static String html(MaxThroughputSearch.Result result) {
    return HtmlReports.search(result);
  }

  public static void writeHtml(MaxThroughputSearch.Result result, Path file) throws IOException {
    write(file, html(result));
  }

  /**
   * Ratios of each run to the run named {@code baseline}.
   *
   * @throws IllegalArgumentException if no run has that name
   */
  public static List<ComparisonRow> compare(List<RunResult> runs, String baseline) {
    RunResult base = runs.stream().filter(r -> r.name().equals(baseline)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no run named '" + baseline + "' among "
            + runs.stream().map(RunResult::name).toList()));
    List<ComparisonRow> rows = new ArrayList<>();
    for (RunResult r : runs) {
      rows.add(new ComparisonRow(r, div(r.achievedRps(), base.achievedRps()),
          div(r.latencyMs().p50(), base.latencyMs().p50()), div(r.latencyMs().p99(), base.latencyMs().p99())));
    }
    return rows;
  }

  /**
   * Each run named in {@code limitsOf} against each of its limits, in the order of {@code runs}.
   *
   * @throws IllegalArgumentException if a named limit is not among {@code runs}
   */
  public static List<LimitRow> limits(List<RunResult> runs, Map<String, List<String>> limitsOf) {
    Map<String, RunResult> byName = new LinkedHashMap<>();
    for (RunResult r : runs) {
      byName.putIfAbsent(r.name(), r);
    }
    List<LimitRow> rows = new ArrayList<>();
    for (RunResult r : runs) {
      for (String limitName : limitsOf.getOrDefault(r.name(), List.of())) {
        RunResult limit = byName.get(limitName);
        if (limit == null) {
          throw new IllegalArgumentException("limit '" + limitName + "' of run '" + r.name() + "' is not among "
              + byName.keySet());
        }
        rows.add(new LimitRow(r, limit, div(r.achievedRps(), limit.achievedRps()),
            div(r.latencyMs().p50(), limit.latencyMs().p50()), div(r.latencyMs().p99(), limit.latencyMs().p99())));
      }
    }
    return rows;
  }

  /** Several runs side by side: a table with ratios to {@code baseline} and overlaid charts. */
  public static String comparisonHtml(String title, List<RunResult> runs, String baseline) {
    return comparisonHtml(title, runs, baseline, ComparisonExtras.NONE);
  }

  /** As {@link #comparisonHtml(String, List, String)}, plus each run's ratios to its own limit and links. */
  public static String comparisonHtml(String title, List<RunResult> runs, String baseline, ComparisonExtras extras) {
    Objects.requireNonNull(title, "title");
    return HtmlReports.comparison(title, runs, compare(runs, baseline), baseline, limits(runs, extras.limitsOf()),
        extras.links());
  }

  public static void writeComparisonHtml(String title, List<RunResult> runs, String baseline, Path file)
      throws IOException {
    write(file, comparisonHtml(title, runs, baseline));
  }

  public static void writeComparisonHtml(String title, List<RunResult> runs, String baseline, ComparisonExtras extras,
      Path file) throws IOException {
    write(file, comparisonHtml(title, runs, baseline, extras));
  }

  /** {@code results/x.json} → {@code results/x.html}. */
  public static Path htmlBeside(Path json) {
    String name = json.getFileName().toString();
    String stem = name.endsWith(".json") ? name.substring(0, name.length() - 5) : name;
    return json.resolveSibling(stem + ".html");
  }

  private static double div(double a, double b) {
    return b == 0 ? Double.NaN : a / b;
  }

  private static void write(Path file, String content) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, content, StandardCharsets.UTF_8);
  }
}
