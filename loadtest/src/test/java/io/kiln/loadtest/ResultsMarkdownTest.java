package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.loadtest.impl.ResultsFolder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResultsMarkdownTest {

  private static Path folder(Path results, String name, String scenario, String started, boolean finished)
      throws Exception {
    Path d = Files.createDirectories(results.resolve(name));
    String meta = "scenario=" + scenario + "\ncommand=loadtest/run.sh " + scenario + "\nstarted=" + started
        + "\ncpus=2\ncpu_model=Test CPU\nmemory=1.0 GiB\njava=openjdk 17\nos=Linux\nloadavg_start=0.50 0.40 0.30\n"
        + "loadavg_start=0.90 0.40 0.30\nloadavg_before_noop-c16=1.25\n" + (finished ? "finished=" + started + "\n" : "");
    Files.writeString(d.resolve("meta.txt"), meta);
    return d;
  }

  @Test
  void tablesComeFromTheLatestCompleteFolderWithRatiosToTheirLimits(@TempDir Path results) throws Exception {
    Path old = folder(results, "noop-1", "noop", "2026-01-01T00:00:00Z", true);
    Reports.writeJson(ReportsTest.synthetic("noop-c16", 1, 1, 1), old.resolve("noop-c16.json"));
    Path d = folder(results, "noop-2", "noop", "2026-01-02T00:00:00Z", true);
    Reports.writeJson(ReportsTest.synthetic("bare-c16", 20_000, 0.5, 2), d.resolve("bare-c16.json"));
    Reports.writeJson(ReportsTest.synthetic("noop-c16", 8_000, 1.5, 5), d.resolve("noop-c16.json"));
    Files.writeString(d.resolve("limits.txt"), "noop-c16 bare-c16\n");
    RunResult best = ReportsTest.synthetic("s@400", 400, 2, 30);
    Reports.writeJson(new MaxThroughputSearch.Result("noop-search", MaxThroughputSearch.Options.of(50), 400, best,
        List.of(new MaxThroughputSearch.Step(1, 400, true, "ok", best)), "converged within 5%"),
        d.resolve("noop-search.search.json"));
    folder(results, "noop-3", "noop", "2026-01-03T00:00:00Z", false); // unfinished: ignored

    Map<String, ResultsFolder> latest = ResultsFolder.latestByScenario(results);
    String md = ResultsMarkdown.render(latest);

    assertThat(latest.get("noop").dir().getFileName().toString()).isEqualTo("noop-2");
    assertThat(md).contains("2 × Test CPU, 1.0 GiB RAM, openjdk 17, Linux")
        .contains("- command: `loadtest/run.sh noop`")
        .contains("at the start: 0.90 0.40 0.30")
        .contains("| noop-c16 | ? | closed ×16 | 8,000 | 1.50 | 5.00 |")
        .contains("| 1.25 | **0.40×** bare-c16 (p99 2.5×) |")
        .contains("**400 req/s** sustained")
        // 8,000 / 20,000 = 40 %: under the 50 % floor
        .containsPattern("no-op model, concurrency 16: throughput ≥ 50 % of the bare server's \\| 8,000 vs 20,000 "
            + "req/s: 40 % \\| \\*\\*MISSED\\*\\*")
        .contains("local actor call (EVENT_LOOP) p50 < 50 µs | – | not measured");
  }

  @Test
  void benchmarkPrintoutsAreQuotedAndJudged(@TempDir Path results) throws Exception {
    Path d = folder(results, "runtime-local-1", "runtime-local", "2026-01-01T00:00:00Z", true);
    Files.write(d.resolve("output.txt"), List.of(
        "scenario                               p50 us     p99 us   p99.9 us      calls/s",
        "[main] WARN some.Logger - noise 1.0 2.0 3.0 4.0",
        "bare event bus, 1 in flight              20.0       60.0      100.0        40000",
        "actor EVENT_LOOP, 1 in flight            35.5       80.0      120.0        25000",
        "actor WORKER, 1 in flight                55.0       90.0      150.0        18000",
        "actor EVENT_LOOP, 16 in flight          200.0      400.0      600.0        75000"));
    Path p = folder(results, "pools-1", "pools", "2026-01-01T00:00:00Z", true);
    Files.write(p.resolve("output.txt"), List.of("# ResNet-18", "", "## round 1", "direct runner, batch 8  -  10.0 "
        + "1.00 1.00 8.00 0", "", "## round 2",
        "scenario                          concurrency   images/s     p50 ms     p99 ms mean batch   errors",
        "direct runner, batch 1                     -      100.0      10.00      12.00       1.00        0",
        "direct runner, batch 16                    -      300.0      50.00      60.00      16.00        0",
        "pool, max_batch_size 1                    32      110.0     290.00     300.00       1.00        0",
        "pool, max_batch_size 16                   32      280.0     110.00     130.00      15.50        0"));

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("local actor call (EVENT_LOOP) p50 < 50 µs | p50 35.5 µs, p99 80.0 µs (bare event bus p50 "
            + "20.0 µs) | met")
        .contains("local actor call (WORKER) p50 < 50 µs | p50 55.0 µs, p99 90.0 µs (bare event bus p50 20.0 µs) | "
            + "**MISSED**")
        .contains("75,000 calls/s (actor EVENT_LOOP, 16 in flight) | met")
        .contains("280.0 images/s (pool, max_batch_size 16, mean batch 15.5) vs 300.0 (direct runner, batch 16): 93 % | met")
        .contains("280.0 vs 110.0 images/s (2.55×) | met")
        .doesNotContain("noise")
        .doesNotContain("## round 1");
  }

  @Test
  void spliceReplacesOnlyTheGeneratedBlock() {
    String first = ResultsMarkdown.splice(null, "one\n");
    assertThat(first).startsWith("# Kiln performance results").contains(ResultsMarkdown.BEGIN + "\none\n"
        + ResultsMarkdown.END);

    String edited = "# Title\n\nIntro by hand.\n\n" + ResultsMarkdown.BEGIN + "\nold\n" + ResultsMarkdown.END
        + "\n\n## Analysis by hand\n";
    assertThat(ResultsMarkdown.splice(edited, "new\n")).isEqualTo("# Title\n\nIntro by hand.\n\n" + ResultsMarkdown.BEGIN
        + "\nnew\n" + ResultsMarkdown.END + "\n\n## Analysis by hand\n");
    assertThat(ResultsMarkdown.splice("# Hand only\n", "x\n")).startsWith("# Hand only\n\n" + ResultsMarkdown.BEGIN);
  }
}
