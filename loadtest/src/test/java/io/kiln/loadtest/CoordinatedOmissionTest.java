package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A server that freezes once for 500 ms. Open loop, timed from intended send times, must show the
 * freeze in its percentiles (every request due during it waited); a closed loop with one connection
 * sends nothing while it waits, so only one sample sees the freeze and its percentiles hide it.
 */
class CoordinatedOmissionTest {
  private static final long STALL_MS = 500;
  private static LoadRunner runner;

  @BeforeAll
  static void start() {
    runner = LoadRunner.create(1);
  }

  @AfterAll
  static void stop() {
    runner.close();
  }

  private static RunResult runAgainstFreshStallingServer(LoadOptions.Builder options) {
    try (TestServer server = TestServer.stallingOnce(1000, STALL_MS)) {
      return runner.run(options.target("http://127.0.0.1:" + server.port).warmup(Duration.ofMillis(300))
          .duration(Duration.ofMillis(2500)).build(), ProgressListener.NONE);
    }
  }

  @Test
  void openLoopShowsTheStallThatClosedLoopHides() {
    RunResult open = runAgainstFreshStallingServer(LoadOptions.builder().name("open").mode(LoadMode.OPEN).rate(200));
    RunResult closed = runAgainstFreshStallingServer(LoadOptions.builder().name("closed").mode(LoadMode.CLOSED)
        .connections(1));
    LoadGen.printSummary(open, System.out);
    LoadGen.printSummary(closed, System.out);

    assertThat(open.requests()).isEqualTo(500);
    assertThat(open.errors()).isZero();
    assertThat(closed.errors()).isZero();
    // ~100 of ~500 requests were due during the freeze, waiting 0..500 ms: the top decile waited >= ~250 ms.
    assertThat(open.latencyMs().max()).isGreaterThanOrEqualTo(STALL_MS * 0.8);
    assertThat(open.latencyMs().p99()).isGreaterThanOrEqualTo(STALL_MS * 0.6);
    assertThat(open.latencyMs().p90()).isGreaterThanOrEqualTo(100);
    // The naive measurement saw the freeze exactly once (its max), so its p90 stays near the service time.
    assertThat(closed.latencyMs().max()).isGreaterThanOrEqualTo(STALL_MS * 0.8);
    assertThat(closed.requests()).isGreaterThan(open.requests());
    assertThat(open.latencyMs().p90()).isGreaterThan(3 * closed.latencyMs().p90());
    assertThat(open.latencyMs().p99()).isGreaterThan(closed.latencyMs().p99());
  }
}
