package io.kiln.gateway.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.MeterBuckets;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The gateway's request meters on their hot path: one histogram per (model, protocol, outcome) with the fixed
 * latency buckets, a counter per status code, and a request whose series exist allocates nothing (measured with the
 * JVM's own per-thread allocation counter over many requests, so the JIT state does not matter).
 */
class GatewayMetricsTest {

  private final AtomicLong clock = new AtomicLong();
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final GatewayMetrics metrics = new GatewayMetrics(registry, false, clock::get);

  private void request(String model, String protocol, String outcome, String code, long nanos) {
    long start = metrics.start();
    clock.addAndGet(nanos);
    metrics.routed(Router.Reason.LOCAL, false);
    metrics.finish(start, model, protocol, outcome, code);
  }

  @Test
  void eachSeriesCountsItsRequestsIntoFixedBuckets() {
    request("mlp", "http", "ok", "200", 3_000_000);
    request("mlp", "http", "ok", "200", 30_000_000);
    request("mlp", "grpc", "unavailable", "UNAVAILABLE", 1_000);

    var ok = registry.get("kiln.gateway.request.duration").tags("model", "mlp", "protocol", "http", "outcome", "ok")
        .timer();
    assertThat(ok.count()).isEqualTo(2);
    assertThat(ok.takeSnapshot().histogramCounts()).hasSize(MeterBuckets.LATENCY.length);
    assertThat(registry.get("kiln.gateway.requests").tags("code", "200").counter().count()).isEqualTo(2);
    assertThat(registry.get("kiln.gateway.requests").tags("protocol", "grpc", "code", "UNAVAILABLE").counter().count())
        .isEqualTo(1);
    assertThat(registry.get("kiln.gateway.routes").tags("reason", "local").counter().count()).isEqualTo(3);
    assertThat(metrics.inFlight()).isZero();

    metrics.close();
    assertThat(registry.find("kiln.gateway.requests").meters()).isEmpty();
    assertThat(registry.find("kiln.gateway.request.duration").meters()).isEmpty();
    assertThat(registry.find("kiln.gateway.routes").meters()).isEmpty();
  }

  @Test
  void aRequestOfKnownSeriesAllocatesNothing() {
    var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    request("mlp", "http", "ok", "200", 1_000);
    int n = 100_000;
    long before = threads.getThreadAllocatedBytes(id);
    for (int i = 0; i < n; i++) {
      request("mlp", "http", "ok", "200", 1_000 + i);
    }
    long bytes = threads.getThreadAllocatedBytes(id) - before;
    // A key record per request was 144 B/op; allow a few stray bytes in all for the measurement itself.
    assertThat(bytes / (double) n).as("bytes allocated per request").isLessThan(1);
  }
}
