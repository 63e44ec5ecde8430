package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.HealthSpec;
import io.kiln.pools.testing.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A pool's health checks, on a manual clock: a silent worker is restarted within the timeout, a healthy one never. */
class HealthProberTest {

  private static final HealthSpec HEALTH = new HealthSpec(Duration.ofMillis(1000), Duration.ofMillis(400));

  private final ManualClock clock = new ManualClock();
  private final List<String> restarted = new ArrayList<>();
  private final List<HealthProber.Target> targets = new ArrayList<>();
  private final List<CompletableFuture<Void>> probes = new ArrayList<>();
  private HealthProber prober;

  @BeforeEach
  void start() {
    prober = new HealthProber(HEALTH, clock, Runnable::run, () -> List.copyOf(targets),
        (worker, why) -> restarted.add(worker + ": " + why));
    prober.start();
  }

  /** A worker whose probes complete only when the test says (never, for a stuck one). */
  private void worker(String name, boolean answers) {
    targets.add(new HealthProber.Target(name, () -> {
      CompletableFuture<Void> f = answers ? CompletableFuture.completedFuture(null) : new CompletableFuture<>();
      probes.add(f);
      return f;
    }));
  }

  @Test
  void aSilentWorkerIsRestartedWithinTheConfiguredTimeout() {
    worker("w0", false);

    clock.advance(HEALTH.period());
    assertThat(probes).hasSize(1);
    clock.advance(HEALTH.timeout().minusMillis(1));
    assertThat(restarted).isEmpty();
    clock.advanceMillis(1);

    assertThat(restarted).containsExactly("w0: no answer to a health check within 400 ms");
  }

  @Test
  void aStuckWorkerIsReportedOnceForItsProbeAndProbedAgainOnceItAnswers() {
    worker("w0", false);
    clock.advance(HEALTH.period().plus(HEALTH.timeout()));
    clock.advance(HEALTH.period().multipliedBy(3));
    assertThat(restarted).hasSize(1);
    assertThat(probes).as("no second probe while the first is unanswered").hasSize(1);

    probes.get(0).complete(null); // the restarted worker answers the probe it got before (now 4.4 s)
    clock.advanceMillis(600); // the next round, at 5 s
    assertThat(probes).hasSize(2);
    probes.get(1).complete(null); // and then answers in time
    clock.advance(HEALTH.timeout());
    assertThat(restarted).hasSize(1);
  }

  @Test
  void aHealthyWorkerIsNeverRestarted() {
    worker("w0", true);
    worker("w1", false);

    clock.advance(HEALTH.period());
    for (int i = 0; i < 10; i++) {
      // w1 answers just before its timeout every round.
      clock.advance(HEALTH.timeout().minusMillis(1));
      probes.stream().filter(f -> !f.isDone()).forEach(f -> f.complete(null));
      clock.advance(HEALTH.period().minus(HEALTH.timeout()).plusMillis(1));
    }

    assertThat(restarted).isEmpty();
    assertThat(probes).hasSize(22); // rounds at 1 s, 2 s, ... 11 s; the last one still unanswered
  }

  @Test
  void aStoppedProberProbesNoMore() {
    worker("w0", false);
    clock.advance(HEALTH.period());
    prober.stop();
    clock.advance(HEALTH.period().multipliedBy(5));

    assertThat(probes).hasSize(1);
    assertThat(restarted).isEmpty();
    assertThat(clock.pendingTimers()).isZero();
  }
}
