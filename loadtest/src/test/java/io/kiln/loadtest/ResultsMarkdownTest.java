package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.loadtest.impl.ResultsFolder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
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
        .contains("local actor call (EVENT_LOOP) p50 ≤ 20 µs, from another thread (request-path issue) | p50 35.5 µs, "
            + "p99 80.0 µs | **MISSED**")
        .contains("local actor calls/s from one caller, 64 in flight ≥ 1,000,000 (request-path issue) | – | not measured")
        .contains("280.0 images/s (pool, max_batch_size 16, mean batch 15.5) vs 300.0 (direct runner, batch 16): 93 % | met")
        .contains("280.0 vs 110.0 images/s (2.55×) | met")
        .doesNotContain("noise")
        .doesNotContain("## round 1");
  }

  @Test
  void thePinnedScenarioIsRenderedWithEveryCheckItsLimitAndItsVerdict(@TempDir Path results) throws Exception {
    Path d = folder(results, "pinned-1", "pinned", "2026-01-01T00:00:00Z", true);
    Files.writeString(d.resolve("meta.txt"), "git=abc1234\nserver_cpu=1\nclient_cpu=0\nwrk=wrk 4.1.0\n"
        + "duration=10s per measured run\nwarm_rule=rounds of 5s at c16\nready_s_identity=4.2\n", StandardOpenOption.APPEND);
    Files.writeString(d.resolve("bare-json-c16.wrk.txt"), WrkOutputTest.recorded("bare-json-c16.txt"));  // 59776.75
    Files.writeString(d.resolve("identity-json-c16.wrk.txt"), WrkOutputTest.recorded("binary-c64.txt")); // 84512.55
    Files.writeString(d.resolve("identity-cold-c16.wrk.txt"), WrkOutputTest.recorded("bare-json-c16.txt"));
    Files.writeString(d.resolve("mlp-json-c16.wrk.txt"), WrkOutputTest.recorded("bare-json-c16.txt"));   // p99 3.14
    Reports.writeJson(ReportsTest.synthetic("bare-grpc-c16", 100000, 0.1, 0.5), d.resolve("bare-grpc-c16.json"));
    Files.writeString(d.resolve("request.json"), "{\"inputs\": []}"); // the body the scenario sent: not a run

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("## pinned").contains("(commit abc1234)").contains("servers on CPU 1")
        .contains("| identity JSON / bare JSON, c16 | 84,513 req/s (identity-json-c16, wrk) | 59,777 req/s "
            + "(bare-json-c16, wrk) | 141 % | ≥ 70 % | met |")
        .contains("| identity cold / steady, c16 (first 5s after ready) | 59,777 req/s (identity-cold-c16, wrk) | "
            + "84,513 req/s (identity-json-c16, wrk) | 71 % | ≥ 80 % | **missed by 9 points** |")
        .contains("| MLP JSON p99, c16 | p99 3.140 ms (mlp-json-c16) | – | 3.140 ms | ≤ 2.0 ms | **missed by 1.140 ms** |")
        .contains("| identity binary / identity JSON, c16 | not measured (identity-binary-c16) | 84,513 req/s "
            + "(identity-json-c16, wrk) | – | ≥ 1.20× | not measured (identity-binary-c16) |")
        .contains("identity: ready 4.2 s after `kiln up`")
        // the floors: the pinned checks, and no gateway floors of scenarios that did not run
        .contains("| request path | identity JSON / bare JSON, c16 ≥ 70 % | 141 % | met | `pinned-1` |")
        .contains("| request path | identity cold / steady, c16 (first 5s after ready) ≥ 80 % | 71 % | **MISSED** "
            + "(missed by 9 points) | `pinned-1` |")
        .contains("local actor call (EVENT_LOOP) p50 ≤ 20 µs, from another thread (request-path issue) | – | not measured")
        .doesNotContain("gateway, no-op model")
        // LoadGen's JSON summaries are in the pinned table, not in a second, generic one
        .doesNotContain("| run | protocol |");
  }

  @Test
  void poolAbRoundsAreTabulatedAndJudgedByTheirMedian(@TempDir Path results) throws Exception {
    Path p = folder(results, "pools-1", "pools", "2026-01-01T00:00:00Z", true);
    Files.write(p.resolve("output.txt"), List.of("# ResNet-18", "", "## round 1",
        "scenario                          concurrency   images/s     p50 ms     p99 ms mean batch   errors",
        "direct runner, batch 16                    -      200.0      50.00      60.00      16.00        0",
        "pool, max_batch_size 16                   32      180.0     110.00     130.00      15.50        0",
        "A/B round 1: direct 200.0 images/s (batch 16), pool 180.0 images/s (max_batch_size 16), ratio 0.900",
        "", "## round 2",
        "A/B round 2: direct 100.0 images/s (batch 8), pool 95.0 images/s (max_batch_size 16), ratio 0.950",
        "", "## round 3",
        "direct runner, batch 16                    -      300.0      50.00      60.00      16.00        0",
        "pool, max_batch_size 1                    32      110.0     290.00     300.00       1.00        0",
        "pool, max_batch_size 16                   32      255.0     110.00     130.00      15.50        0",
        "A/B round 3: direct 300.0 images/s (batch 16), pool 255.0 images/s (max_batch_size 16), ratio 0.850",
        "", "A/B over 3 rounds: pool/direct median 0.900, mean 0.900, min 0.850, max 0.950, sd 0.050"));

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("| 2 | 100.0 (8) | 95.0 (16) | 95 % |")
        .contains("Pool / direct over 3 rounds: **median 90 %**, mean 90.0 %, min 85 %, max 95 %, standard deviation "
            + "5.0 points (target ≥ 90 %: met).")
        .contains("concurrency 32 ≥ 90 % of the best direct batched throughput, A/B interleaved (median of the rounds) | "
            + "median 90 % (mean 90.0 %, 85–95 %, sd 5.0 points) over 3 rounds | met")
        .contains("255.0 vs 110.0 images/s (2.32×) | met")
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
