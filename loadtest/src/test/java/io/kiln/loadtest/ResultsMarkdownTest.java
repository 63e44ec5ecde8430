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
        // 8,000 / 20,000 = 40 %, one run: under the 50 % floor, but one run is no verdict
        .contains("| gateway | floor (earlier issue) | gateway, no-op model / bare server, concurrency 16 ≥ 50 % | 40 % "
            + "(1 round) | insufficient rounds (1 of 3; runs not named NAME.rN, or the limit not measured again in each "
            + "round) | `noop-2` |")
        .contains("local actor call (EVENT_LOOP) p50, 1 in flight < 50.0 µs | – | not measured");
  }

  @Test
  void theRenderingDependsOnlyOnTheFilesAFolderCommits(@TempDir Path results) throws Exception {
    Path d = folder(results, "noop-1", "noop", "2026-01-02T00:00:00Z", true);
    Reports.writeJson(ReportsTest.synthetic("bare-c16", 20_000, 0.5, 2), d.resolve("bare-c16.json"));
    Reports.writeJson(ReportsTest.synthetic("noop-c16", 8_000, 1.5, 5), d.resolve("noop-c16.json"));
    Files.writeString(d.resolve("limits.txt"), "noop-c16 bare-c16\n");
    String committed = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    // What a run keeps on the machine that measured it (loadtest/.gitignore): a clone must render the same text.
    Files.writeString(d.resolve("index.html"), "<html></html>");
    Files.writeString(d.resolve("kiln.log"), "log");

    assertThat(ResultsMarkdown.render(ResultsFolder.latestByScenario(results))).isEqualTo(committed);
  }

  @Test
  void gatewayRoundsNamedDotRnAreJudgedWhenTheyAlternate(@TempDir Path results) throws Exception {
    Path d = folder(results, "noop-1", "noop", "2026-01-02T00:00:00Z", true);
    double[][] rps = {{20_000, 12_000}, {20_000, 9_000}, {20_000, 11_000}}; // 60 %, 45 %, 55 %
    for (int r = 0; r < 3; r++) {
      for (int i = 0; i < 2; i++) {
        String name = (i == 0 ? "bare-c16" : "noop-c16") + ".r" + (r + 1);
        RunResult x = ReportsTest.synthetic(name, rps[r][i], 1, 2);
        Reports.writeJson(withStart(x, "2026-01-02T00:0" + r + ":" + (i == 0 ? "10" : "20") + "Z"),
            d.resolve(name + ".json"));
      }
    }

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("gateway, no-op model / bare server, concurrency 16 ≥ 50 % | median 55 % (45–60 %, 3 rounds) "
        + "| **UNSTABLE**: the range 45–60 % straddles ≥ 50 % (median meets it) | `noop-1` |");
  }

  private static RunResult withStart(RunResult r, String startedAt) {
    return new RunResult(r.name(), r.config(), startedAt, r.latencyFrom(), r.measuredSeconds(), r.requests(), r.ok(),
        r.errors(), r.achievedRps(), r.okRps(), r.offeredRps(), r.latencyMs(), r.outcomes(), r.series(),
        r.distribution(), r.latencyByOutcome(), r.examples());
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

    assertThat(md).contains("| runtime | floor (earlier issue) | local actor call (EVENT_LOOP) p50, 1 in flight < 50.0 µs | "
            + "35.5 µs (1 round); bare event bus in the same run: 20.0 µs | insufficient rounds (1 of 3) |")
        .contains("| runtime | target | local actor call (EVENT_LOOP) p50, 1 in flight, from another thread "
            + "(request-path issue) ≤ 20.0 µs | 35.5 µs (1 round)")
        .contains("local actor calls/s from one caller, 64 in flight (request-path issue; best actor mode of each run) "
            + "≥ 1,000,000/s | – | not measured")
        // the old survey table: direct and pool not alternated, so no verdict even with rounds
        .contains("pool, batching on, concurrency 32 / best direct batched throughput ≥ 90 % | 93 % (1 round) | "
            + "insufficient rounds (1 of 3; direct and pool were measured one after the other, not alternated)")
        .contains("pool, batching on / batching off, concurrency 32 > 1.00× | 2.55× (1 round) | insufficient rounds")
        .doesNotContain("noise")
        .doesNotContain("## round 1");
  }

  @Test
  void runtimeRunsHeadedRunNAreRoundsOfOneVerdict(@TempDir Path results) throws Exception {
    Path d = folder(results, "runtime-local-1", "runtime-local", "2026-01-01T00:00:00Z", true);
    List<String> out = new java.util.ArrayList<>();
    double[] p50 = {18.0, 19.5, 17.2};
    for (int i = 0; i < 3; i++) {
      out.add("## run " + (i + 1) + " of 3");
      out.add("scenario                               p50 us     p99 us   p99.9 us      calls/s");
      out.add(String.format(java.util.Locale.ROOT, "bare event bus, 1 in flight              %.1f       60.0      100.0"
          + "        40000", p50[i] + 1));
      out.add(String.format(java.util.Locale.ROOT, "actor EVENT_LOOP, 1 in flight            %.1f       80.0      "
          + "120.0        25000", p50[i]));
      out.add("actor EVENT_LOOP, 64 in flight            9.3       37.1       66.1      " + (i == 1 ? "990000" : "2760208"));
    }
    Files.write(d.resolve("output.txt"), out);

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("(request-path issue) ≤ 20.0 µs | median 18.0 µs (17.2–19.5 µs, 3 rounds); bare event bus "
            + "in the same runs: median 19.0 µs | met |")
        .contains("≥ 1,000,000/s | median 2,760,208/s (990,000–2,760,208/s, 3 rounds) | **UNSTABLE**")
        .contains("## run 2 of 3");
  }

  @Test
  void aRealModelScenarioInTheRoundsFormatIsRenderedAndJudged(@TempDir Path results) throws Exception {
    Path d = folder(results, "ocr-1", "ocr", "2026-01-01T00:00:00Z", true);
    Files.write(d.resolve("rounds.tsv"), List.of("round\tname\tstart\tvalue\tunit\terrors",
        "1\tdet-c1-kiln\t1700000000\t45\timages/s\t0", "1\tdet-c1-direct\t1700000010\t50\timages/s\t0",
        "2\tdet-c1-direct\t1700000100\t50\timages/s\t0", "2\tdet-c1-kiln\t1700000110\t46\timages/s\t0",
        "3\tdet-c1-kiln\t1700000200\t47\timages/s\t0", "3\tdet-c1-direct\t1700000210\t50\timages/s\t0"));
    Files.write(d.resolve("checks.tsv"), List.of("label\tkind\trun\tbase\top\ttarget\tshow",
        "det, c=1: Kiln / direct ORT\ttarget\tdet-c1-kiln\tdet-c1-direct\t>=\t0.9\tpercent",
        "det, c=1: Kiln rate\tfloor (made up for the test)\tdet-c1-kiln\t-\t>=\t40\tper_second"));

    String md = ResultsMarkdown.render(ResultsFolder.latestByScenario(results));

    assertThat(md).contains("| det, c=1: Kiln / direct ORT | target | r1: 45.00 / 50.00 images/s = 90 %; r2: 46.00 / "
            + "50.00 images/s = 92 %; r3: 47.00 / 50.00 images/s = 94 % | median 92 % (90–94 %, 3 rounds) | ≥ 90 % | met |")
        .contains("| ocr | target | det, c=1: Kiln / direct ORT ≥ 90 % | median 92 % (90–94 %, 3 rounds) | met | `ocr-1` |")
        .contains("| ocr | floor (made up for the test) | det, c=1: Kiln rate ≥ 40/s | median 46/s (45–47/s, 3 rounds) | met")
        .contains("| 2 | det-c1-direct | 50.00 | images/s | 0 | 2023-11-14T22:15:00Z |");
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
        .contains("**one run of each, not rounds**")
        .contains("| identity JSON / bare JSON, c16 | target | 84,513 / 59,777 = 141 % | 141 % (1 round) | ≥ 70 % | "
            + "insufficient rounds (1 of 3; the folder holds one run of each, measured before rounds existed) |")
        .contains("| MLP JSON p99, c16 | target | p99 3.140 ms | 3.140 ms (1 round) | ≤ 2.000 ms | insufficient rounds "
            + "(1 of 3) |")
        .contains("| identity binary / identity JSON, c16 | target | – | – | ≥ 1.20× | not measured (identity-binary-c16) |")
        .contains("identity: ready 4.2 s after `kiln up`")
        // the targets and floors table: the pinned checks, with their kind, and no gateway floors of scenarios that
        // did not run
        .contains("| request path | target | identity JSON / bare JSON, c16 ≥ 70 % | 141 % (1 round) | insufficient "
            + "rounds (1 of 3; the folder holds one run of each, measured before rounds existed) | `pinned-1` |")
        .contains("| request path | floor (#28), not the target | #28 floor: MLP JSON / bare JSON, c16 ≥ 30 % | 100 % "
            + "(1 round) | insufficient rounds")
        .contains("| runtime | target | local actor call (EVENT_LOOP) p50, 1 in flight, from another thread "
            + "(request-path issue) ≤ 20.0 µs | – | not measured |")
        .contains(ResultsMarkdown.RULES)
        .doesNotContain("gateway, no-op model")
        .doesNotContain("| met |")
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
        // 90 %, 95 %, 85 %: the median meets 90 %, the range straddles it
        .contains("Pool / direct over 3 rounds: **median 90 %**, mean 90.0 %, min 85 %, max 95 %, standard deviation "
            + "5.0 points (floor ≥ 90 %: **UNSTABLE**: the range 85–95 % straddles ≥ 90 % (median meets it)).")
        .contains("| pools | floor (earlier issue) | pool, batching on, concurrency 32 / best direct batched throughput, "
            + "A/B interleaved ≥ 90 % | median 90 % (85–95 %, 3 rounds) | **UNSTABLE**")
        // batching off was measured in one round's table only
        .contains("pool, batching on / batching off, concurrency 32 > 1.00× | 2.32× (1 round) | insufficient rounds (1 of 3)")
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
