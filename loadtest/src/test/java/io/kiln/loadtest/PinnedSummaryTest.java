package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pinned scenario's summary.md from a folder of recorded wrk outputs and LoadGen summaries. */
class PinnedSummaryTest {

  private static void wrk(Path dir, String name, String recorded) throws Exception {
    Files.writeString(dir.resolve(name + ".wrk.txt"), WrkOutputTest.recorded(recorded));
  }

  @Test
  void tabulatesEveryTargetAndJudgesTheRatiosFromTheToolsOutput(@TempDir Path dir) throws Exception {
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

    assertThat(md).contains("DURATION=3s loadtest/run.sh pinned").contains("abc1234").contains("servers on CPU 1");
    assertThat(md).contains("| bare-json-c16 | bare HTTP, OIP JSON work | wrk | 59777 | 0.238 | 3.140 | 0 | 1.93 | as above |");
    assertThat(md).contains("| bare-json-c1 | bare HTTP, OIP JSON work | wrk | 59777 | 0.238 | 3.140 | 0 |  | flat after 3: 40000, 58000, 59000 |");
    assertThat(md).contains("**not flat** after 2: 1000, 2000");
    assertThat(md).contains("| identity-grpc-c16 | Kiln identity, gRPC | LoadGen | 50000 | 0.300 | 1.000 | 0 |  | no record |");
    assertThat(md).contains("| mlp-grpc-c16 | Kiln MLP, gRPC | | not measured |");
    // 84512.55 / 59776.75
    assertThat(md).contains("| identity JSON / bare JSON, c16 | 141 % | ≥ 70 % | met |");
    assertThat(md).contains("| identity JSON / bare JSON, c1 | 74 % | ≥ 50 % | not judged: identity-json-c1 had 48911 errors |");
    assertThat(md).contains("| MLP JSON / bare JSON, c16 | 100 % | ≥ 50 % | met |");
    assertThat(md).contains("| MLP JSON p99, c16 | 3.140 ms | ≤ 2.0 ms | missed by 1.140 ms |");
    // 50000 / 84512.55 = 0.59
    assertThat(md).contains("| identity gRPC (h2load) / identity JSON (wrk), c16 | 0.08× | ≥ 1.30× | missed by 1.22× |");
    assertThat(md).contains("| identity gRPC / bare gRPC, c16 (h2load) | 70 % | ≥ 60 % | met |");
    assertThat(md).contains("| identity gRPC / bare gRPC, c16 (LoadGen) | 50 % | ≥ 60 % | missed by 10 points |");
    assertThat(md).contains("| identity-grpc-h2load-c16 | Kiln identity, gRPC | h2load (mean) | 7175 | 1.640 | – | 0 |");
    assertThat(md).contains("| identity binary / identity JSON, c16 | | ≥ 1.20× | not measured (identity-binary-c16) |");
    // 59776.75 / 84512.55 = 0.707
    assertThat(md).contains("| identity cold / steady, c16 (first 5s after ready) | 71 % | ≥ 80 % | missed by 9 points |");
    assertThat(md).contains("identity: ready 4.2 s after `kiln up` started");
  }

  @Test
  void aRunThatAnsweredNoRequestIsNotJudged(@TempDir Path dir) throws Exception {
    wrk(dir, "bare-json-c16", "no-requests.txt");          // a server stalled on a shared core: 0 requests in 2 s
    wrk(dir, "identity-json-c16", "binary-c64.txt");

    String md = PinnedSummary.markdown(dir);

    assertThat(md).contains("| bare-json-c16 | bare HTTP, OIP JSON work | wrk | 0 |")
        .contains("| identity JSON / bare JSON, c16 | – | ≥ 70 % | not judged: bare-json-c16 answered no requests |");
  }

  @Test
  void aWrkOutputOfAFailedRunIsAnErrorNamingTheFile(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("bare-json-c1.wrk.txt"), "unable to connect to 127.0.0.1:8090 Connection refused\n");

    assertThatThrownBy(() -> PinnedSummary.markdown(dir)).hasMessageContaining("bare-json-c1.wrk.txt")
        .hasMessageContaining("not the output of a completed wrk run");
  }
}
