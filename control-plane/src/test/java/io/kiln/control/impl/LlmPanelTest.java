package io.kiln.control.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.pools.MeterBuckets;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The "Generative models" panel from two nodes' meters, shaped as the gateway's {@code kiln.llm.*} and a decoder
 * worker's {@code kiln.decoder.*} register them: node a's gateway answers, node b runs the decoder (and answers some
 * too); a reads b's samples over a real (local) event bus, and the panel adds both up.
 */
@Tag("slow")
class LlmPanelTest {

  final Vertx vertx = Vertx.vertx();
  final ClusterSeriesTest.TestClock clock = new ClusterSeriesTest.TestClock();

  @AfterEach
  void close() {
    vertx.close().toCompletionStage().toCompletableFuture().join();
  }

  /** The gateway's meters of one model (as io.kiln.gateway.impl.LlmMetrics builds them). */
  static final class Gateway {
    final Timer first;
    final Timer inter;
    final Counter tokens;

    Gateway(PrometheusMeterRegistry r, String model) {
      first = MeterBuckets.latency(Timer.builder(LlmSampler.FIRST_TOKEN)).tag("model", model).register(r);
      inter = MeterBuckets.latency(Timer.builder(LlmSampler.INTER_TOKEN)).tag("model", model).register(r);
      tokens = Counter.builder(LlmSampler.GENERATION_TOKENS).tag("model", model).register(r);
    }

    void answer(int tokensOut, long firstMillis, long gapMillis) {
      first.record(firstMillis, TimeUnit.MILLISECONDS);
      for (int i = 1; i < tokensOut; i++) {
        inter.record(gapMillis, TimeUnit.MILLISECONDS);
      }
      tokens.increment(tokensOut);
    }
  }

  /** One decoder worker's meters (as DecoderMeters registers them), on values the test sets. */
  static final class Worker {
    final AtomicLong running = new AtomicLong();
    final AtomicLong waiting = new AtomicLong();
    final AtomicLong used = new AtomicLong();
    final AtomicLong available = new AtomicLong(100);
    final AtomicLong hits = new AtomicLong();
    final AtomicLong lookups = new AtomicLong();
    final AtomicLong preemptions = new AtomicLong();

    Worker(PrometheusMeterRegistry r, String deployment, int index) {
      Tags tags = Tags.of("deployment", deployment, "version", "1", "worker", Integer.toString(index));
      Gauge.builder(LlmSampler.SEQUENCES, running, AtomicLong::get).tags(tags.and("state", "running")).register(r);
      Gauge.builder(LlmSampler.SEQUENCES, waiting, AtomicLong::get).tags(tags.and("state", "waiting")).register(r);
      Gauge.builder(LlmSampler.KV_BLOCKS, used, AtomicLong::get).tags(tags.and("state", "used")).register(r);
      Gauge.builder(LlmSampler.KV_BLOCKS, available, AtomicLong::get).tags(tags.and("state", "available"))
          .register(r);
      FunctionCounter.builder(LlmSampler.PREFIX_HITS, hits, AtomicLong::get).tags(tags).register(r);
      FunctionCounter.builder(LlmSampler.PREFIX_LOOKUPS, lookups, AtomicLong::get).tags(tags).register(r);
      FunctionCounter.builder(LlmSampler.PREEMPTIONS, preemptions, AtomicLong::get).tags(tags).register(r);
    }
  }

  @Test
  void thePanelAddsUpEveryNodesGenerationsAndShowsTheDecodersState() throws Exception {
    PrometheusMeterRegistry ra = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    PrometheusMeterRegistry rb = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RequestSampler sa = new RequestSampler(ra, clock, 300);
    RequestSampler sb = new RequestSampler(rb, clock, 300);
    ClusterSeries a = new ClusterSeries(vertx, "a", sa, () -> null, 300);
    ClusterSeries b = new ClusterSeries(vertx, "b", sb, () -> null, 300);
    a.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    b.listen().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    Gateway ga = new Gateway(ra, "chat");
    Gateway gb = new Gateway(rb, "chat");
    Worker w0 = new Worker(rb, "chat", 0);
    Worker w1 = new Worker(rb, "chat", 1);
    ga.answer(10, 30, 5); // before the baseline: never counted
    w0.hits.set(1000);
    w0.lookups.set(1000);
    sa.sample();
    sb.sample();

    // Two seconds: 9 answers through a (20 ms to the first token, 5 ms a token), 1 slow one through b.
    for (int s = 0; s < 2; s++) {
      clock.advanceSeconds(1);
      for (int i = 0; i < (s == 0 ? 5 : 4); i++) {
        ga.answer(11, 20, 5);
      }
      if (s == 1) {
        gb.answer(11, 900, 40);
      }
      w0.hits.addAndGet(30);
      w0.lookups.addAndGet(100);
      w1.lookups.addAndGet(100);
      w1.preemptions.addAndGet(2);
      sa.sample();
      sb.sample();
    }
    w0.running.set(3);
    w1.running.set(2);
    w1.waiting.set(4);
    w0.used.set(50); // each worker holds 100 blocks: used + available
    w0.available.set(50);
    w1.used.set(25);
    w1.available.set(75);
    sb.sample(); // the gauges as b reads them now, in the same second
    long second = clock.millis() / 1000;
    a.refresh(List.of("a", "b")).toCompletableFuture().get(10, TimeUnit.SECONDS);

    JsonNode chat = a.llm(second, 10).path("chat");
    assertThat(chat.path("requests").asLong()).isEqualTo(10);
    assertThat(chat.path("ttftP50Ms").asDouble()).isBetween(10.0, 25.0);
    assertThat(chat.path("ttftP99Ms").asDouble()).as("the slow one, on b").isBetween(500.0, 1000.0);
    assertThat(chat.path("itlP50Ms").asDouble()).isBetween(2.5, 5.0);
    assertThat(chat.path("tokensPerSecond").asDouble()).isCloseTo(110 / 10.0, within(1e-9));
    assertThat(chat.path("running").asDouble()).isEqualTo(5);
    assertThat(chat.path("waiting").asDouble()).isEqualTo(4);
    assertThat(chat.path("kvUsage").asDouble()).isCloseTo(75 / 200.0, within(1e-9));
    assertThat(chat.path("prefixHitRate").asDouble()).as("60 of 400 tokens looked up in the window")
        .isCloseTo(60 / 400.0, within(1e-9));
    assertThat(chat.path("preemptions").asLong()).isEqualTo(4);

    // A node whose gauges are older than GAUGE_SECONDS adds none; the counts of the window remain.
    clock.advanceSeconds(LlmPanel.GAUGE_SECONDS + 1);
    JsonNode later = a.llm(clock.millis() / 1000, 30).path("chat");
    assertThat(later.path("running").isNull()).isTrue();
    assertThat(later.path("requests").asLong()).isEqualTo(10);
    // A model with no decoder or generation anywhere is not a row.
    assertThat(a.llm(second, 10).has("echo")).isFalse();
  }
}
