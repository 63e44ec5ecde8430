package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportsTest {
  private static RunResult real;

  @BeforeAll
  static void runOnce() {
    try (BareServer server = BareServer.start(BareServer.Options.defaults().withDelayMs(2));
        LoadRunner runner = LoadRunner.create(1)) {
      real = runner.run(LoadOptions.builder().name("bare-open").target("http://127.0.0.1:" + server.port())
          .mode(LoadMode.OPEN).rate(200).warmup(Duration.ofMillis(200)).duration(Duration.ofMillis(2200)).build(),
          ProgressListener.NONE);
    }
  }

  @Test
  void jsonSummaryHasTheDocumentedSchemaAndRoundTrips(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("results/bare-open.json");
    Reports.writeJson(real, file);
    JsonNode j = new ObjectMapper().readTree(file.toFile());

    assertThat(j.get("name").asText()).isEqualTo("bare-open");
    JsonNode config = j.get("config");
    assertThat(config.get("mode").asText()).isEqualTo("open");
    assertThat(config.get("rate").asDouble()).isEqualTo(200);
    assertThat(config.get("protocol").asText()).isEqualTo("http-json");
    assertThat(config.get("target").asText()).startsWith("http://127.0.0.1:");
    assertThat(config.get("requests").get(0).get("label").asText()).isEqualTo("fp32:1x64");
    assertThat(j.get("latencyFrom").asText()).isEqualTo("intended");
    assertThat(j.get("achievedRps").isNumber()).isTrue();
    assertThat(j.get("offeredRps").asDouble()).isEqualTo(200);
    assertThat(j.get("requests").asLong()).isEqualTo(440);
    for (String p : List.of("count", "min", "mean", "p50", "p90", "p99", "p999", "max")) {
      assertThat(j.get("latencyMs").get(p).isNumber()).as(p).isTrue();
    }
    JsonNode l = j.get("latencyMs");
    assertThat(l.get("p50").asDouble()).isGreaterThanOrEqualTo(2.0)
        .isLessThanOrEqualTo(l.get("p90").asDouble());
    assertThat(l.get("p99").asDouble()).isLessThanOrEqualTo(l.get("max").asDouble());
    assertThat(j.get("outcomes").get("http:200").asLong()).isEqualTo(j.get("requests").asLong());
    // One-second windows over a 2.2 s run; a loaded machine may close a window late, never early.
    assertThat(j.get("series").size()).isBetween(2, 6);
    for (JsonNode s : j.get("series")) {
      assertThat(s.fieldNames()).toIterable().contains("t", "seconds", "requests", "rps", "errors", "p50", "p99", "max");
    }
    assertThat(j.get("series").get(0).get("t").asDouble()).isGreaterThan(0.9).isLessThan(3.0);
    JsonNode dist = j.get("distribution");
    assertThat(dist.size()).isGreaterThan(10);
    assertThat(dist.get(dist.size() - 1).get("percentile").asDouble()).isEqualTo(100.0);
    for (int i = 1; i < dist.size(); i++) {
      assertThat(dist.get(i).get("latencyMs").asDouble()).isGreaterThanOrEqualTo(dist.get(i - 1).get("latencyMs").asDouble());
    }

    RunResult read = Reports.readJson(file);
    assertThat(read).usingRecursiveComparison().ignoringFields("config").isEqualTo(real);
    // Config values are plain JSON (an int may come back as Integer where a Long went in).
    assertThat(Reports.toJson(read)).isEqualTo(Reports.toJson(real));
  }

  @Test
  void htmlReportIsSelfContainedWithTheCharts() {
    String html = Reports.html(real);

    assertThat(html).startsWith("<!DOCTYPE html>").contains("<svg id=\"latency-percentiles\"")
        .contains("<svg id=\"throughput-over-time\"").contains("<svg id=\"latency-over-time\"")
        .contains(">90%<").contains(">99%<").contains("<path d=\"M").contains("bare-open");
    assertThat(html).doesNotContain("<script").doesNotContain("src=").doesNotContain("href=")
        .doesNotContain("@import").doesNotContain("url(");
  }

  @Test
  void comparisonHasRatiosToTheBaseline(@TempDir Path dir) throws Exception {
    RunResult base = synthetic("bare", 1000, 1.0, 2.0);
    RunResult slower = synthetic("kiln-noop", 250, 4.0, 10.0);
    List<Reports.ComparisonRow> rows = Reports.compare(List.of(base, slower), "bare");

    assertThat(rows.get(0).throughputRatio()).isEqualTo(1.0);
    assertThat(rows.get(1).throughputRatio()).isEqualTo(0.25);
    assertThat(rows.get(1).p50Ratio()).isEqualTo(4.0);
    assertThat(rows.get(1).p99Ratio()).isEqualTo(5.0);

    Path html = dir.resolve("cmp.html");
    Reports.writeComparisonHtml("bare vs noop", List.of(base, slower, real), "bare", html);
    String page = Files.readString(html);
    assertThat(page).contains("0.25×").contains("4.00×").contains("5.00×").contains("kiln-noop")
        .contains("<svg id=\"latency-percentiles\"").doesNotContain("<script");
    assertThatThrownBy(() -> Reports.compare(List.of(base), "nope")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nope");
  }

  @Test
  void searchReportListsEveryStep() {
    MaxThroughputSearch.Result result = new MaxThroughputSearch.Result("s", MaxThroughputSearch.Options.of(5), 100,
        real, List.of(new MaxThroughputSearch.Step(1, 100, true, "p99 1 ms", real),
            new MaxThroughputSearch.Step(2, 200, false, "p99 9 ms > 5 ms", synthetic("x", 150, 3, 9))),
        "converged");
    String html = Reports.html(result);

    assertThat(html).contains("<svg id=\"p99-vs-rate\"").contains("p99 9 ms &gt; 5 ms").contains("converged")
        .contains("<svg id=\"latency-percentiles\"");
    assertThat(Reports.toJson(result)).contains("\"bestRate\" : 100.0").contains("\"steps\"");
  }

  static RunResult synthetic(String name, double rps, double p50, double p99) {
    return new RunResult(name, Map.of("mode", "closed", "connections", 16), "2026-01-01T00:00:00Z", "sent", 10,
        (long) (rps * 10), (long) (rps * 10), 0, rps, rps, null,
        new RunResult.Latency((long) (rps * 10), p50 / 2, p50, p50, (p50 + p99) / 2, p99, p99 * 1.5, p99 * 2),
        Map.of("http:200", (long) (rps * 10)),
        List.of(new RunResult.Sample(1, 1, (long) rps, rps, 0, p50, p99, p99 * 2)),
        List.of(new RunResult.PercentilePoint(0, p50 / 2), new RunResult.PercentilePoint(50, p50),
            new RunResult.PercentilePoint(99, p99), new RunResult.PercentilePoint(100, p99 * 2)), null, null);
  }
}
