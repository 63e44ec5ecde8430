package io.kiln.control.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Two nodes' samplers over gateway-shaped timers in their own registries, one node's series asking the other over
 * a real (local) event bus: per-second deltas, errors, and p50/p99 read from the summed buckets.
 */
@Tag("slow")
class ClusterSeriesTest {

  /** A clock the test moves. */
  static final class TestClock extends Clock {
    final AtomicLong millis = new AtomicLong(1_700_000_000_000L);

    @Override
    public ZoneOffset getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis.get());
    }

    void advanceSeconds(int s) {
      millis.addAndGet(s * 1000L);
    }
  }

  final Vertx vertx = Vertx.vertx();
  final TestClock clock = new TestClock();

  @AfterEach
  void close() {
    vertx.close().toCompletionStage().toCompletableFuture().join();
  }

  static Timer timer(PrometheusMeterRegistry r, String model, String outcome) {
    // As the gateway builds its request timer.
    return Timer.builder(RequestSampler.TIMER).tags("model", model, "outcome", outcome, "protocol", "http")
        .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofSeconds(60)).register(r);
  }

  static void record(Timer t, int n, long millis) {
    for (int i = 0; i < n; i++) {
      t.record(millis, TimeUnit.MILLISECONDS);
    }
  }

  @Test
  void samplesAreDeltasPerSecondAndTheFirstReadIsTheBaseline() {
    PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Timer ok = timer(r, "echo", "ok");
    record(ok, 50, 5); // before the baseline: never counted
    RequestSampler s = new RequestSampler(r, clock, 10);
    s.sample();
    assertThat(s.since(-1)).isEmpty();
    clock.advanceSeconds(1);
    record(ok, 7, 5);
    record(timer(r, "echo", "timeout"), 3, 200);
    record(timer(r, RequestSampler.UNKNOWN_MODEL, "not_found"), 4, 1);
    s.sample();
    clock.advanceSeconds(1);
    s.sample(); // a quiet second
    List<RequestSampler.Sample> samples = s.since(-1);
    assertThat(samples).hasSize(2);
    RequestSampler.ModelDelta d = samples.get(0).models().get("echo");
    assertThat(d.requests()).isEqualTo(10);
    assertThat(d.errors()).isEqualTo(3);
    assertThat(java.util.Arrays.stream(d.counts()).sum() + d.overflow()).isEqualTo(10);
    assertThat(samples.get(0).models()).doesNotContainKey(RequestSampler.UNKNOWN_MODEL);
    assertThat(samples.get(1).models()).isEmpty();
    assertThat(s.since(samples.get(0).seq())).hasSize(1);
    // Two reads within one second are two samples of that second: none is rewritten after it was read.
    record(ok, 2, 5);
    s.sample();
    record(ok, 3, 5);
    s.sample();
    List<RequestSampler.Sample> twice = s.since(samples.get(1).seq());
    assertThat(twice).hasSize(2).allSatisfy(x -> assertThat(x.second()).isEqualTo(samples.get(1).second()));
    assertThat(twice.get(0).models().get("echo").requests()).isEqualTo(2);
    assertThat(twice.get(1).models().get("echo").requests()).isEqualTo(3);
  }

  @Test
  void theRingKeepsItsCapacity() {
    PrometheusMeterRegistry r = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RequestSampler s = new RequestSampler(r, clock, 5);
    for (int i = 0; i < 20; i++) {
      s.sample();
      clock.advanceSeconds(1);
    }
    assertThat(s.since(-1)).hasSize(5);
  }

  @Test
  void aNodesSeriesAddsUpEveryNodesSamples() throws Exception {
    PrometheusMeterRegistry ra = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    PrometheusMeterRegistry rb = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RequestSampler sa = new RequestSampler(ra, clock, 300);
    RequestSampler sb = new RequestSampler(rb, clock, 300);
    ClusterSeries a = new ClusterSeries(vertx, "a", sa, () -> null, 300);
    ClusterSeries b = new ClusterSeries(vertx, "b", sb, () -> null, 300);
    a.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    b.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    sa.sample();
    sb.sample();
    clock.advanceSeconds(1);
    // One second: 90 fast requests on a, 10 slow ones on b (2 of them failed).
    record(timer(ra, "echo", "ok"), 90, 2);
    record(timer(rb, "echo", "ok"), 8, 800);
    record(timer(rb, "echo", "error"), 2, 800);
    sa.sample();
    sb.sample();
    long second = clock.millis() / 1000;

    a.refresh(List.of("a", "b", "gone")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    ObjectNode out = a.render(second, 10, Set.of("idle"));

    assertThat(out.path("end").asLong()).isEqualTo(second);
    assertThat(out.path("start").asLong()).isEqualTo(second - 9);
    JsonNode echo = out.path("models").path("echo");
    assertThat(echo.path("rate")).hasSize(10);
    assertThat(echo.path("rate").get(9).asLong()).isEqualTo(100);
    assertThat(echo.path("errors").get(9).asLong()).isEqualTo(2);
    assertThat(echo.path("rate").get(8).asLong()).isZero();
    assertThat(echo.path("p50").get(8).isNull()).isTrue();
    // p50 among the 90 fast ones (2 ms), p99 among b's slow ones (800 ms): the cluster's, not an average.
    assertThat(echo.path("p50").get(9).asDouble()).isBetween(1.0, 3.0);
    assertThat(echo.path("p99").get(9).asDouble()).isBetween(600.0, 1000.0);
    JsonNode idle = out.path("models").path("idle");
    assertThat(idle.path("rate")).hasSize(10).allSatisfy(v -> assertThat(v.asLong()).isZero());

    // Asked again: only newer samples travel, the earlier ones stay.
    clock.advanceSeconds(1);
    record(timer(rb, "echo", "ok"), 5, 800);
    sa.sample();
    sb.sample();
    a.refresh(List.of("a", "b")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    JsonNode later = a.render(second + 1, 10, Set.of()).path("models").path("echo").path("rate");
    assertThat(later.get(8).asLong()).isEqualTo(100);
    assertThat(later.get(9).asLong()).isEqualTo(5);

    // Two samples in one second on b (a late tick, then a prompt one): both counted, in that second.
    record(timer(rb, "echo", "ok"), 4, 800);
    sb.sample();
    a.refresh(List.of("a", "b")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    record(timer(rb, "echo", "ok"), 6, 800);
    sb.sample();
    a.refresh(List.of("a", "b")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(a.render(second + 1, 10, Set.of()).path("models").path("echo").path("rate").get(9).asLong())
        .isEqualTo(15);

    // b restarts (a new sampler, numbers from 0 again): a reads it afresh rather than waiting for number 3.
    b.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    PrometheusMeterRegistry rb2 = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RequestSampler sb2 = new RequestSampler(rb2, clock, 300);
    new ClusterSeries(vertx, "b", sb2, () -> null, 300).listen().toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
    sb2.sample();
    clock.advanceSeconds(1);
    record(timer(rb2, "echo", "ok"), 9, 3);
    sb2.sample();
    a.refresh(List.of("a", "b")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(a.render(second + 2, 10, Set.of()).path("models").path("echo").path("rate").get(9).asLong())
        .isEqualTo(9);
  }

  @Test
  void quantilesInterpolateInsideTheirBucket() {
    TreeMap<Double, double[]> b = new TreeMap<>();
    b.put(0.010, new double[] {0.0, 50});
    b.put(0.020, new double[] {0.010, 50});
    assertThat(ClusterSeries.quantileMillis(b, 100, 0.5)).isCloseTo(10.0, within(0.01));
    assertThat(ClusterSeries.quantileMillis(b, 100, 0.75)).isCloseTo(15.0, within(0.01));
    assertThat(ClusterSeries.quantileMillis(b, 100, 0.99)).isCloseTo(19.8, within(0.01));
    assertThat(ClusterSeries.quantileMillis(b, 200, 0.99)).as("in the overflow: the last bound")
        .isCloseTo(20.0, within(0.01));
  }
}
