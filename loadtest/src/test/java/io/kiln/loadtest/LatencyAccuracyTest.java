package io.kiln.loadtest;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The generator reports what a server with a known, fixed service time really does. */
class LatencyAccuracyTest {
  private static BareServer server;
  private static LoadRunner runner;

  @BeforeAll
  static void start() {
    server = BareServer.start(BareServer.Options.defaults().withDelayMs(20));
    runner = LoadRunner.create(1);
  }

  @AfterAll
  static void stop() {
    runner.close();
    server.close();
  }

  private LoadOptions.Builder base() {
    return LoadOptions.builder().target("http://127.0.0.1:" + server.port()).model("bare")
        .warmup(Duration.ofMillis(300)).duration(Duration.ofSeconds(2));
  }

  @Test
  void closedLoopSeesTheFixedDelay() {
    RunResult r = runner.run(base().name("closed").mode(LoadMode.CLOSED).connections(4).build(), ProgressListener.NONE);

    assertThat(r.errors()).isZero();
    assertThat(r.outcomes()).containsOnlyKeys("http:200");
    assertThat(r.latencyMs().p50()).isBetween(20.0, 60.0);
    assertThat(r.latencyMs().min()).isGreaterThanOrEqualTo(19.9);
    // 4 connections x 1 / ~21 ms: throughput follows the service time, within a loaded machine's slack.
    assertThat(r.achievedRps()).isBetween(4 / 0.060, 4 / 0.020);
    assertThat(r.latencyFrom()).isEqualTo("sent");
  }

  @Test
  void openLoopSeesTheFixedDelayAtTheOfferedRate() {
    RunResult r = runner.run(base().name("open").mode(LoadMode.OPEN).rate(100).build(), ProgressListener.NONE);

    assertThat(r.errors()).isZero();
    // Every request due in the measured window is accounted for, exactly once.
    assertThat(r.requests()).isEqualTo(200);
    assertThat(r.latencyMs().p50()).isBetween(20.0, 60.0);
    assertThat(r.offeredRps()).isEqualTo(100.0);
    assertThat(r.achievedRps()).isBetween(85.0, 101.0);
    assertThat(r.latencyFrom()).isEqualTo("intended");
    assertThat(r.series()).hasSizeBetween(2, 3);
  }

  @Test
  void bareServerSharesOnePortAcrossEventLoops() {
    try (BareServer multi = BareServer.start(BareServer.Options.defaults().withEventLoops(2))) {
      RunResult r = runner.run(base().target("http://127.0.0.1:" + multi.port()).mode(LoadMode.CLOSED).connections(4)
          .maxRequests(50).warmup(Duration.ZERO).build(), ProgressListener.NONE);

      assertThat(r.outcomes()).containsExactly(java.util.Map.entry("http:200", 50L));
      assertThat(multi.requestsReceived()).isGreaterThanOrEqualTo(51);
    }
  }

  @Test
  void maxRequestsBoundsTheRun() {
    RunResult r = runner.run(base().name("count").mode(LoadMode.CLOSED).connections(2).maxRequests(10)
        .duration(Duration.ofSeconds(30)).build(), ProgressListener.NONE);

    assertThat(r.requests()).isEqualTo(10);
    assertThat(r.measuredSeconds()).isLessThan(5);
  }
}
