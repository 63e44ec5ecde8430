package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoadGenTest {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return LoadGen.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @Test
  void runsWritesJsonAndHtmlAndPrintsProgress(@TempDir Path dir) throws Exception {
    Path mix = dir.resolve("mix.txt");
    Files.writeString(dir.resolve("a.json"),
        "{\"inputs\":[{\"name\":\"input\",\"shape\":[1,2],\"datatype\":\"FP32\",\"data\":[0.5,1.5]}]}");
    Files.writeString(mix, "# weight source\n3 a.json\n1 fp32:1x8  # generated\n");
    try (BareServer server = BareServer.start(BareServer.Options.defaults())) {
      int code = run("--url", "http://127.0.0.1:" + server.port(), "--mix", mix.toString(), "--mode", "open",
          "--rate", "100", "--warmup", "200ms", "--duration", "1.2s", "--event-loops", "1",
          "--out", dir.resolve("results/cli.json").toString());

      assertThat(code).as(err.toString()).isZero();
    }
    assertThat(Files.exists(dir.resolve("results/cli.json"))).isTrue();
    assertThat(Files.readString(dir.resolve("results/cli.html"))).contains("<svg");
    RunResult r = Reports.readJson(dir.resolve("results/cli.json"));
    assertThat(r.name()).isEqualTo("cli");
    assertThat(r.config().get("requests").toString()).contains("a.json").contains("fp32:1x8");
    assertThat(out.toString()).contains("req/s").contains("p99").contains("wrote");
    assertThat(err.toString()).contains("[measure");
  }

  @Test
  void severalUrlsShareTheRequestsRoundRobin(@TempDir Path dir) throws Exception {
    java.util.concurrent.atomic.AtomicInteger a = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger b = new java.util.concurrent.atomic.AtomicInteger();
    String[] urls = new String[2];
    try (TestServer first = TestServer.start(v -> req -> req.end().onSuccess(x -> {
      a.incrementAndGet();
      req.response().end("{}");
    })); TestServer second = TestServer.start(v -> req -> req.end().onSuccess(x -> {
      b.incrementAndGet();
      req.response().end("{}");
    }))) {
      urls[0] = "http://127.0.0.1:" + first.port;
      urls[1] = "http://127.0.0.1:" + second.port;
      int code = run("--url", urls[0] + "," + urls[1], "--connections",
          "2", "--warmup", "0s", "--duration", "30s", "--max-requests", "40", "--event-loops", "1", "--quiet",
          "--out", dir.resolve("two.json").toString());

      assertThat(code).as(err.toString()).isZero();
    }
    RunResult r = Reports.readJson(dir.resolve("two.json"));
    assertThat(r.outcomes()).containsOnly(java.util.Map.entry("http:200", 40L));
    assertThat(r.config().get("targets")).isEqualTo(java.util.List.of(urls[0], urls[1]));
    // One priming request first (index 0, to the first), then the 40 measured ones alternate.
    assertThat(a.get()).isEqualTo(21);
    assertThat(b.get()).isEqualTo(20);
  }

  @Test
  void warmRunsRoundsInOneJvmUntilFlatAndRecordsThem(@TempDir Path dir) throws Exception {
    Path record = dir.resolve("bare.warm.txt");
    try (BareServer server = BareServer.start(BareServer.Options.defaults())) {
      // A 1000 % limit: any two rounds against a live server are "flat", so this stops after round 2.
      int code = run("warm", "--url", "http://127.0.0.1:" + server.port(), "--model", "bare", "--connections", "2",
          "--warmup", "0s", "--round", "300ms", "--max-rounds", "4", "--flat-pct", "1000", "--event-loops", "1",
          "--quiet", "--record", record.toString());

      assertThat(code).as(err.toString()).isZero();
    }
    assertThat(out.toString()).contains("round 1: ").contains("round 2: ").doesNotContain("round 3").contains("flat after 2 rounds");
    assertThat(Files.readAllLines(record)).hasSize(3).allMatch(l -> l.matches("round \\d \\d+\\.\\d|flat yes"));
  }

  @Test
  void badArgumentsExitWithTwoAndSayWhy() {
    assertThat(run("--mode", "sideways")).isEqualTo(2);
    assertThat(err.toString()).contains("unknown mode 'sideways'");
    assertThat(run("--rat", "5")).isEqualTo(2);
    assertThat(err.toString()).contains("unknown option(s): --rat");
    assertThat(run("--search")).isEqualTo(2);
    assertThat(err.toString()).contains("--p99-target-ms");
    assertThat(run("--request", "x.json", "--shape", "1x2")).isEqualTo(2);
    assertThat(run("--help")).isZero();
    assertThat(out.toString()).contains("usage: LoadGen");
  }

  @Test
  void compareWritesATableWithRatios(@TempDir Path dir) throws Exception {
    Reports.writeJson(ReportsTest.synthetic("bare", 1000, 1, 2), dir.resolve("bare.json"));
    Reports.writeJson(ReportsTest.synthetic("noop", 500, 2, 8), dir.resolve("noop.json"));

    int code = run("compare", "--baseline", "bare", "--out", dir.resolve("cmp.html").toString(),
        dir.resolve("bare.json").toString(), dir.resolve("noop.json").toString());

    assertThat(code).as(err.toString()).isZero();
    assertThat(out.toString()).contains("noop").contains("0.50x").contains("4.00x");
    assertThat(Files.readString(dir.resolve("cmp.html"))).contains("0.50×");
  }

  @Test
  void compareAddsRatiosToEachRunsLimitsAndLinksTheReports(@TempDir Path dir) throws Exception {
    Reports.writeJson(ReportsTest.synthetic("bare-c16", 1000, 1, 2), dir.resolve("bare-c16.json"));
    Reports.writeJson(ReportsTest.synthetic("direct-b8", 4000, 1, 1), dir.resolve("direct-b8.json"));
    Reports.writeJson(ReportsTest.synthetic("kiln-c16", 500, 2, 8), dir.resolve("kiln-c16.json"));
    Files.writeString(dir.resolve("kiln-c16.html"), "<html></html>");
    Files.writeString(dir.resolve("kiln.search.html"), "<html></html>");

    int code = run("compare", "--baseline", "bare-c16", "--out", dir.resolve("index.html").toString(),
        "--limits", "kiln-c16=bare-c16,kiln-c16=direct-b8", "--links", dir.resolve("kiln.search.html").toString(),
        dir.resolve("bare-c16.json").toString(), dir.resolve("direct-b8.json").toString(),
        dir.resolve("kiln-c16.json").toString());

    assertThat(code).as(err.toString()).isZero();
    assertThat(out.toString()).contains("kiln-c16                 / bare-c16             throughput  0.50x  p50  2.00x  "
        + "p99  4.00x").contains("/ direct-b8            throughput  0.13x");
    String html = Files.readString(dir.resolve("index.html"));
    assertThat(html).contains("Against the limits").contains("<b>0.50×</b>").contains("<b>0.13×</b>")
        .contains("<a href=\"kiln-c16.html\">run kiln-c16</a>").contains("<a href=\"kiln.search.html\">");
    assertThat(run("compare", "--baseline", "bare-c16", "--out", dir.resolve("x.html").toString(), "--limits", "kiln-c16",
        dir.resolve("bare-c16.json").toString())).isEqualTo(2);
  }
}
