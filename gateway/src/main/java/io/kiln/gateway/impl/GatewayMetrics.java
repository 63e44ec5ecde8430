package io.kiln.gateway.impl;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * The gateway's meters: {@code kiln_gateway_requests_total{model,outcome,code,protocol}},
 * {@code kiln_gateway_request_duration_seconds} (histogram), {@code kiln_gateway_requests_in_flight},
 * {@code kiln_gateway_routes_total{reason}}, plus the JVM binders. Thread-safe. {@link #close()} removes the
 * gateway's own meters so a shared registry does not keep a stopped gateway's series.
 */
final class GatewayMetrics implements AutoCloseable {

  /** The model label for names the directory does not know, so unknown names cannot explode cardinality. */
  static final String UNKNOWN_MODEL = "_unknown";
  /**
   * The model label of an internal model's requests (a node's warm-up traffic): {@link #finish} records
   * nothing for them, so they never show in the user-facing request series. Compared by identity.
   */
  static final String UNMETERED = new String("_internal");

  private final MeterRegistry registry;
  private final LongSupplier nanoClock;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();
  private final Gauge inFlightGauge;
  private final List<AutoCloseable> binders = new ArrayList<>();

  GatewayMetrics(MeterRegistry registry, boolean bindJvm, LongSupplier nanoClock) {
    this.registry = registry;
    this.nanoClock = nanoClock;
    inFlightGauge = Gauge.builder("kiln.gateway.requests.in.flight", inFlight, AtomicInteger::get)
        .description("Inference requests received and not yet answered")
        .register(registry);
    if (bindJvm) {
      new JvmMemoryMetrics().bindTo(registry);
      JvmGcMetrics gc = new JvmGcMetrics();
      gc.bindTo(registry);
      binders.add(gc);
      JvmThreadMetrics threads = new JvmThreadMetrics();
      threads.bindTo(registry);
      new ClassLoaderMetrics().bindTo(registry);
      new ProcessorMetrics().bindTo(registry);
      new UptimeMetrics().bindTo(registry);
    }
  }

  /** Marks one inference request as started; pass the result to {@link #finish}. */
  long start() {
    inFlight.incrementAndGet();
    return nanoClock.getAsLong();
  }

  /** Records how a request started with {@link #start()} ended. Call exactly once per start. */
  void finish(long startNanos, String model, String protocol, String outcome, String code) {
    inFlight.decrementAndGet();
    if (model == UNMETERED) {
      return;
    }
    String key = model + '\u0000' + protocol + '\u0000' + outcome;
    counters.computeIfAbsent(key + '\u0000' + code, k -> Counter.builder("kiln.gateway.requests")
        .description("Inference requests by model, outcome and status code")
        .tags("model", model, "outcome", outcome, "code", code, "protocol", protocol)
        .register(registry)).increment();
    timers.computeIfAbsent(key, k -> Timer.builder("kiln.gateway.request.duration")
        .description("Inference request latency, from receipt to response")
        .tags("model", model, "outcome", outcome, "protocol", protocol)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofSeconds(60))
        .register(registry)).record(Math.max(0, nanoClock.getAsLong() - startNanos), TimeUnit.NANOSECONDS);
  }

  void routed(Router.Reason reason) {
    counters.computeIfAbsent("route\u0000" + reason, k -> Counter.builder("kiln.gateway.routes")
        .description("Routing decisions: pinned by a locality hint, local, spilled from a full local pool, balanced")
        .tag("reason", reason.name().toLowerCase(Locale.ROOT))
        .register(registry)).increment();
  }

  int inFlight() {
    return inFlight.get();
  }

  @Override
  public void close() {
    registry.remove(inFlightGauge);
    counters.values().forEach(registry::remove);
    timers.values().forEach(registry::remove);
    counters.clear();
    timers.clear();
    for (AutoCloseable b : binders) {
      try {
        b.close();
      } catch (Exception ignored) {
        // Binder shutdown failures leave at most a stale JVM meter; nothing to do about them.
      }
    }
  }
}
