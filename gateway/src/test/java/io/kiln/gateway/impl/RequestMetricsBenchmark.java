package io.kiln.gateway.impl;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What the gateway's metrics cost per inference request (one {@code routed} and one {@code finish}, as
 * {@link Dispatcher} and {@link HttpApi} record them): {@code gateway} is {@link GatewayMetrics} itself, looked up
 * label by label with no allocation (0 B/op; keyed by label records before, 144 B/op); {@code joinedKeys} is how
 * it looked its meters up before that (a key string joined per request, a
 * new string hashed anew each time), kept here as the baseline. Run with
 * {@code loadtest/bench-codec.sh io.kiln.gateway.impl.RequestMetricsBenchmark}; B/op is the stable figure.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RequestMetricsBenchmark {

  private PrometheusMeterRegistry registry;
  private GatewayMetrics metrics;
  private JoinedKeys joined;
  private final String model = "noop";

  @Setup
  public void setup() {
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    metrics = new GatewayMetrics(registry, false, System::nanoTime);
    joined = new JoinedKeys(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  @TearDown
  public void tearDown() {
    metrics.close();
    registry.close();
  }

  @Benchmark
  public long gateway() {
    long start = metrics.start();
    metrics.routed(Router.Reason.LOCAL, false);
    metrics.finish(start, model, "http", "ok", "200");
    return start;
  }

  @Benchmark
  public long joinedKeys() {
    long start = System.nanoTime();
    joined.routed(Router.Reason.LOCAL);
    joined.finish(start, model, "http", "ok", "200");
    return start;
  }

  /** The lookups GatewayMetrics made before: meters by key strings joined per request. */
  static final class JoinedKeys {
    private final PrometheusMeterRegistry into;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();

    JoinedKeys(PrometheusMeterRegistry into) {
      this.into = into;
    }

    void finish(long startNanos, String model, String protocol, String outcome, String code) {
      String key = model + '\u0000' + protocol + '\u0000' + outcome;
      counters.computeIfAbsent(key + '\u0000' + code, k -> Counter.builder("kiln.gateway.requests")
          .tags("model", model, "outcome", outcome, "code", code, "protocol", protocol)
          .register(into)).increment();
      timers.computeIfAbsent(key, k -> Timer.builder("kiln.gateway.request.duration")
          .tags("model", model, "outcome", outcome, "protocol", protocol)
          .publishPercentileHistogram()
          .minimumExpectedValue(Duration.ofMillis(1))
          .maximumExpectedValue(Duration.ofSeconds(60))
          .register(into)).record(Math.max(0, System.nanoTime() - startNanos), TimeUnit.NANOSECONDS);
    }

    void routed(Router.Reason reason) {
      counters.computeIfAbsent("route\u0000" + reason, k -> Counter.builder("kiln.gateway.routes")
          .tag("reason", reason.name()).register(into)).increment();
    }
  }
}
