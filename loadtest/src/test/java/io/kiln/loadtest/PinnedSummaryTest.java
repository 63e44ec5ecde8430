package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.loadtest.impl.RoundVerdict.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pinned scenario's summary.md and index.html from folders of recorded wrk outputs and LoadGen summaries. */
class PinnedSummaryTest {

  private static void wrk(Path dir, String name, String recorded) throws Exception {
    Files.writeString(dir.resolve(name + ".wrk.txt"), WrkOutputTest.recorded(recorded));
  }

  /** A wrk output as recorded (bare-json-c16.txt), with this rate and p99. */
  static String wrkOutput(double rps, double p99Ms) throws Exception {
    return WrkOutputTest.recorded("bare-json-c16.txt").replace("Requests/sec:  59776.75",
        String.format(Locale.ROOT, "Requests/sec:  %.2f", rps)).replace("99%    3.14ms",
        String.format(Locale.ROOT, "99%%    %.2fms", p99Ms));
  }

  private static Map<String, PinnedSummary.Check> byLabel(Path dir) throws Exception {
    return PinnedSummary.checks(dir).stream().collect(Collectors.toMap(PinnedSummary.Check::label, Function.identity()));
  }

  @Test
  void aFolderFromBeforeRoundsIsTabulatedButGivesNoVerdict(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("meta.txt"), "command=DURATION=3s loadtest/run.sh pinned\ngit=abc1234\ncpus=2\n"
        + "server_cpu=1\nclient_cpu=0\nready_s_identity=4.2\nloadavg_before_bare-json-c16=1.93\n");
    wrk(dir, "bare-json-c16", "bare-json-c16.txt");       // 59776.75 req/s, p99 3.14 ms
    wrk(dir, "identity-json-c16", "binary-c64.txt");      // 84512.55 req/s, p99 6.61 ms
    wrk(dir, "mlp-json-c16", "bare-json-c16.txt");
    wrk(dir, "identity-json-c1", "non2xx.txt");           // all 400s
    wrk(dir, "bare-json-c1", "bare-json-c16.txt");
    wrk(dir, "identity-cold-c16", "bare-json-c16.txt");
    Reports.writeJson(ReportsTest.synthetic("identity-grpc-c16", 50000, 0.3, 1), dir.resolve("identity-grpc-c16.json"));
    Reports.writeJson(ReportsTest.synthetic("bare-grpc-c16", 100000, 0.1, 0.5), dir.resolve("bare-grpc-c16.json"));
    Files.writeString(dir.resolve("bare-grpc-h2load-c16.h2load.txt"), H2loadOutputTest.recorded("bare-grpc-c16.txt"));
    Files.writeString(dir.resolve("identity-grpc-h2load-c16.h2load.txt"), H2loadOutputTest.recorded("bare-grpc-c16.txt")
        .replace("10250.67 req/s", "7175.47 req/s"));
    Files.writeString(dir.resolve("bare-json.warm.txt"), "round 1 40000.4\nround 2 58000\nround 3 59000\nflat yes\n");
    Files.writeString(dir.resolve("identity-json.warm.txt"), "round 1 1000\nround 2 2000\nflat no\n");

    String md = PinnedSummary.markdown(dir);

    assertThat(md).contains("DURATION=3s loadtest/run.sh pinned").contains("abc1234").contains("servers on CPU 1")
        .contains("**one run of each, not rounds**");
    assertThat(md).contains("| single run | bare-json-c16 | bare HTTP, OIP JSON work | wrk | 59777 | 0.238 | 3.140 | 0 "
        + "| 1.93 | as above |");
    assertThat(md).contains("| single run | bare-json-c1 | bare HTTP, OIP JSON work | wrk | 59777 | 0.238 | 3.140 | 0 |  "
        + "| flat after 3: 40000, 58000, 59000 |");
    assertThat(md).contains("**not flat** after 2: 1000, 2000");
    assertThat(md).contains("| single run | mlp-grpc-c16 | Kiln MLP, gRPC | | not measured |");
    // 84512.55 / 59776.75 = 141 %: above the target, but one run is no verdict
    assertThat(md).contains("| identity JSON / bare JSON, c16 | target | 84,513 / 59,777 = 141 % | 141 % (1 round) | "
        + "≥ 70 % | insufficient rounds (1 of 3; the folder holds one run of each, measured before rounds existed) |");
    assertThat(md).contains("| identity JSON / bare JSON, c1 | target | 44,465 / 59,777 = not usable | – | ≥ 50 % | "
        + "not judged: identity-json-c1 had 48911 errors |");
    assertThat(md).contains("| MLP JSON p99, c16 | target | p99 3.140 ms | 3.140 ms (1 round) | ≤ 2.000 ms | "
        + "insufficient rounds (1 of 3) |");
    assertThat(md).contains("| identity gRPC / bare gRPC, c16 (LoadGen) | target | 50,000 / 100,000 = 50 % | 50 % (1 round)");
    assertThat(md).contains("| single run | identity-grpc-h2load-c16 | Kiln identity, gRPC | h2load (mean) | 7175 | 1.640 | – | 0 |");
    assertThat(md).contains("| identity binary / identity JSON, c16 | target | – | – | ≥ 1.20× | not measured "
        + "(identity-binary-c16) |");
    // #28's lower numbers are floors, labelled so, beside the targets
    assertThat(md).contains("| #28 floor: identity JSON / bare JSON, c16 | floor (#28), not the target | 84,513 / 59,777 "
        + "= 141 % | 141 % (1 round) | ≥ 57 % | insufficient rounds");
    assertThat(md).contains("identity: ready 4.2 s after `kiln up` started");
    assertThat(PinnedSummary.checks(dir)).noneMatch(PinnedSummary.Check::met);
  }

  /**
   * Three rounds as run.sh writes them: round-N/identity/ with Kiln's runs and the limits measured next to them, and
   * round.txt with when each began.
   */
  private static void round(Path dir, int n, double identityRps, double bareRps, double mlpP99, double bareStartOffset)
      throws Exception {
    Path leaf = Files.createDirectories(dir.resolve("round-" + n).resolve("identity"));
    double t0 = 1_700_000_000 + n * 1000;
    Files.writeString(leaf.resolve("identity-json-c16.wrk.txt"), wrkOutput(identityRps, 1.5));
    Files.writeString(leaf.resolve("bare-json-c16.wrk.txt"), wrkOutput(bareRps, 0.6));
    Files.writeString(leaf.resolve("identity-cold-c16.wrk.txt"), wrkOutput(identityRps * 0.9, 4));
    Files.writeString(leaf.resolve("round.txt"), String.format(Locale.ROOT,
        "ready_s=2%d.5%nstart.identity-cold-c16=%.3f%nstart.identity-json-c16=%.3f%nload.identity-json-c16=1.9%n"
            + "start.bare-json-c16=%.3f%n", n, t0, t0 + 60, t0 + 70 + bareStartOffset));
    Path mlp = Files.createDirectories(dir.resolve("round-" + n).resolve("mlp"));
    Files.writeString(mlp.resolve("mlp-json-c16.wrk.txt"), wrkOutput(20000, mlpP99));
    Files.writeString(mlp.resolve("round.txt"), String.format(Locale.ROOT, "start.mlp-json-c16=%.3f%n", t0 + 300));
  }

  @Test
  void interleavedRoundsAreJudgedByMedianAndRange(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("meta.txt"), "git=abc1234\ninterleaving=Kiln then bare per concurrency\n");
    round(dir, 1, 43000, 60000, 1.8, 0);  // 72 %
    round(dir, 2, 41000, 60000, 2.2, 0);  // 68 %
    round(dir, 3, 45000, 60000, 1.9, 0);  // 75 %

    Map<String, PinnedSummary.Check> c = byLabel(dir);

    PinnedSummary.Check c16 = c.get("identity JSON / bare JSON, c16");
    assertThat(c16.judgement().status()).isEqualTo(Status.UNSTABLE);
    assertThat(c16.measured()).isEqualTo("median 72 % (68–75 %, 3 rounds)");
    assertThat(c.get("#28 floor: identity JSON / bare JSON, c16").judgement().status()).isEqualTo(Status.MET);
    assertThat(c.get("#28 floor: identity JSON / bare JSON, c16").kind()).isEqualTo(PinnedSummary.Kind.FLOOR_28);
    // cold / steady: 90 % in every round
    assertThat(c.get("identity cold / steady, c16 (first 5s after ready)").judgement().status()).isEqualTo(Status.MET);
    // p99 1.8 / 2.2 / 1.9 ms against ≤ 2 ms
    assertThat(c.get("MLP JSON p99, c16").judgement().status()).isEqualTo(Status.UNSTABLE);
    assertThat(c.get("MLP JSON / bare JSON, c16").verdict()).isEqualTo("not measured (mlp-json-c16 and "
        + "bare-json-c16 in no common round)");

    String md = PinnedSummary.markdown(dir);
    assertThat(md).contains("| identity JSON / bare JSON, c16 | target | r1 identity: 43,000 / 60,000 = 72 %; "
        + "r2 identity: 41,000 / 60,000 = 68 %; r3 identity: 45,000 / 60,000 = 75 % | median 72 % (68–75 %, 3 rounds) | "
        + "≥ 70 % | **UNSTABLE**: the range 68–75 % straddles ≥ 70 % (median meets it) |");
    assertThat(md).contains("| r2 identity | identity-json-c16 | Kiln identity, JSON | wrk | 41000 |")
        .contains("- r3 identity: ready 23.5 s after `kiln up` started");

    String html = PinnedSummary.html(dir);
    assertThat(html).startsWith("<!DOCTYPE html>").contains("side by side")
        .contains("41,000 req/s (identity-json-c16, wrk)").contains("60,000 req/s (bare-json-c16, wrk)")
        .contains("unstable: the range 68–75 % straddles ≥ 70 % (median meets it)");
  }

  @Test
  void aLimitMeasuredOnceForEveryRoundIsNotInterleaved(@TempDir Path dir) throws Exception {
    // every round's bare-json-c16 started before round 1's Kiln run: the limit was measured once, then copied
    round(dir, 1, 50000, 60000, 1.8, -2000);
    round(dir, 2, 50000, 60000, 1.8, -3000);
    round(dir, 3, 50000, 60000, 1.8, -4000);

    PinnedSummary.Check c16 = byLabel(dir).get("identity JSON / bare JSON, c16");

    assertThat(c16.judgement().status()).isEqualTo(Status.INSUFFICIENT_ROUNDS);
    assertThat(c16.verdict()).contains("3 rounds, not interleaved")
        .contains("do not show bare-json-c16 measured again in every round");
    // an absolute figure has no limit to alternate with
    assertThat(byLabel(dir).get("MLP JSON p99, c16").judgement().status()).isEqualTo(Status.MET);
  }

  @Test
  void twoRoundsAreNotEnough(@TempDir Path dir) throws Exception {
    round(dir, 1, 50000, 60000, 1.8, 0);
    round(dir, 2, 50000, 60000, 1.8, 0);

    assertThat(byLabel(dir).get("identity JSON / bare JSON, c16").verdict()).isEqualTo("insufficient rounds (2 of 3)");
  }

  @Test
  void aRunThatAnsweredNoRequestIsNotJudged(@TempDir Path dir) throws Exception {
    wrk(dir, "bare-json-c16", "no-requests.txt");          // a server stalled on a shared core: 0 requests in 2 s
    wrk(dir, "identity-json-c16", "binary-c64.txt");

    String md = PinnedSummary.markdown(dir);

    assertThat(md).contains("| single run | bare-json-c16 | bare HTTP, OIP JSON work | wrk | 0 |")
        .contains("| identity JSON / bare JSON, c16 | target | 84,513 / 0 = not usable | – | ≥ 70 % | not judged: "
            + "bare-json-c16 answered no requests |");
  }

  @Test
  void aWrkOutputOfAFailedRunIsAnErrorNamingTheFile(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("bare-json-c1.wrk.txt"), "unable to connect to 127.0.0.1:8090 Connection refused\n");

    assertThatThrownBy(() -> PinnedSummary.markdown(dir)).hasMessageContaining("bare-json-c1.wrk.txt")
        .hasMessageContaining("not the output of a completed wrk run");
  }

  @Test
  void mainWritesTheSummaryAndTheHtmlReport(@TempDir Path dir) throws Exception {
    round(dir, 1, 50000, 60000, 1.8, 0);
    // main exits only on failure
    PinnedSummary.main(new String[] {"--dir", dir.toString()});

    assertThat(Files.readString(dir.resolve("summary.md"))).contains("identity JSON / bare JSON, c16");
    assertThat(Files.readString(dir.resolve("index.html"))).contains("<table>");
    assertThat(List.of(dir.resolve("summary.md"), dir.resolve("index.html"))).allMatch(Files::isRegularFile);
  }
}
