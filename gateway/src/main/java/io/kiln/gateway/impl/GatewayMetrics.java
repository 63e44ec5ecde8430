package io.kiln.gateway.impl;

import io.kiln.pools.MeterBuckets;
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
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.LongSupplier;

/**
 * The gateway's meters: {@code kiln_gateway_requests_total{model,outcome,code,protocol}},
 * {@code kiln_gateway_request_duration_seconds} (histogram, {@link MeterBuckets#LATENCY} buckets),
 * {@code kiln_gateway_requests_in_flight},
 * {@code kiln_gateway_routes_total{reason}}, {@code kiln_gateway_offloaded_total{protocol}} (messages decoded or
 * encoded on a worker thread, see {@link FrontExchange#OFFLOAD_BYTES}), plus the JVM binders. Thread-safe. {@link #close()} removes the
 * gateway's own meters so a shared registry does not keep a stopped gateway's series.
 *
 * <p>Requests to internal models (a node's warm-up traffic, labelled {@link #UNMETERED}) are recorded by the
 * same code into the same kinds of meters, but in a registry of the gateway's own that nobody scrapes: the
 * recording path is the one users' requests take, so the JIT compiles it during the warm-up, and the
 * user-facing series never count the node's own requests.
 */
final class GatewayMetrics implements AutoCloseable {

  /** The model label for names the directory does not know, so unknown names cannot explode cardinality. */
  static final String UNKNOWN_MODEL = "_unknown";
  /** The model label of an internal model's requests: recorded out of sight (see the class comment). */
  static final String UNMETERED = new String("_internal"); // compared by identity: no model name can be it

  private final MeterRegistry registry;
  private final MeterRegistry unseen;
  private final LongSupplier nanoClock;
  // The wall clock at one instant of nanoClock: a request's finish is kept in nanoClock's time (read for its timer
  // anyway) and turned into epoch milliseconds only when the statistics extension asks.
  private final long epochMillisAtAnchor = System.currentTimeMillis();
  private final long nanosAtAnchor;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Series user;
  private final Series internal;
  private final Gauge inFlightGauge;
  private Gauge deadlinesGauge;
  private final List<AutoCloseable> binders = new ArrayList<>();
  private final Map<String, Counter> offloaded = new ConcurrentHashMap<>();

  GatewayMetrics(MeterRegistry registry, boolean bindJvm, LongSupplier nanoClock) {
    this.registry = registry;
    this.nanoClock = nanoClock;
    this.nanosAtAnchor = nanoClock.getAsLong();
    this.unseen = registry instanceof PrometheusMeterRegistry ? new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)
        : new SimpleMeterRegistry();
    this.user = new Series(registry);
    this.internal = new Series(unseen);
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
    (model == UNMETERED ? internal : user).finish(startNanos, model, protocol, outcome, code);
  }

  /** @param unmetered whether the request was for an internal model */
  void routed(Router.Reason reason, boolean unmetered) {
    (unmetered ? internal : user).routed(reason);
  }

  /**
   * When a user's request for {@code model} (a metrics label) last finished, in wall-clock milliseconds since the
   * epoch, over every protocol and outcome; 0 if none has on this gateway.
   */
  long lastInferenceMillis(String model) {
    long last = user.lastNanos(model);
    return last == 0 ? 0 : epochMillisAtAnchor + TimeUnit.NANOSECONDS.toMillis(last - nanosAtAnchor);
  }

  /** One request decoded, or answer encoded, on a worker thread (a large message: rare, so a map lookup is fine). */
  void offloaded(String protocol) {
    offloaded.computeIfAbsent(protocol, p -> Counter.builder("kiln.gateway.offloaded")
        .description("Messages decoded or encoded on a worker thread for their size")
        .tag("protocol", p)
        .register(registry)).increment();
  }

  int inFlight() {
    return inFlight.get();
  }

  /**
   * Shows how many request deadlines {@code deadlines} watches ({@code kiln_deadlines_watched}): the gateway's calls
   * and the local actor calls they make, in flight. A figure that grows under steady load is a leak.
   */
  void watch(io.kiln.runtime.time.Deadlines deadlines) {
    deadlinesGauge = Gauge.builder("kiln.deadlines.watched", deadlines, io.kiln.runtime.time.Deadlines::watched)
        .description("Request and call deadlines watched on this node (in flight; answered ones leave at once)")
        .register(registry);
  }

  @Override
  public void close() {
    registry.remove(inFlightGauge);
    if (deadlinesGauge != null) {
      registry.remove(deadlinesGauge);
    }
    offloaded.values().forEach(registry::remove);
    user.close();
    internal.close();
    unseen.close();
    for (AutoCloseable b : binders) {
      try {
        b.close();
      } catch (Exception ignored) {
        // Binder shutdown failures leave at most a stale JVM meter; nothing to do about them.
      }
    }
  }

  /** The request and routing meters of one registry. */
  private final class Series {
    private final MeterRegistry into;
    // Looked up label by label, by the label strings themselves (their hashes are cached), with get() before any
    // computeIfAbsent: a request for series that exist allocates nothing. A key object per request, or a
    // capturing lambda handed to computeIfAbsent, would be new garbage each time.
    private final Map<String, Map<String, Map<String, Cell>>> byModel = new ConcurrentHashMap<>();
    private final AtomicReferenceArray<Counter> routes = new AtomicReferenceArray<>(Router.Reason.values().length);

    Series(MeterRegistry into) {
      this.into = into;
    }

    void finish(long startNanos, String model, String protocol, String outcome, String code) {
      Cell cell = cell(model, protocol, outcome);
      Counter c = cell.counters.get(code);
      if (c == null) {
        c = cell.counters.computeIfAbsent(code, k -> Counter.builder("kiln.gateway.requests")
            .description("Inference requests by model, outcome and status code")
            .tags("model", model, "outcome", outcome, "code", k, "protocol", protocol)
            .register(into));
      }
      c.increment();
      long now = nanoClock.getAsLong();
      cell.timer.record(Math.max(0, now - startNanos), TimeUnit.NANOSECONDS);
      cell.lastNanos = now == 0 ? 1 : now; // 0 means "none yet"
    }

    long lastNanos(String model) {
      long last = 0;
      Map<String, Map<String, Cell>> byProtocol = byModel.get(model);
      if (byProtocol != null) {
        for (Map<String, Cell> byOutcome : byProtocol.values()) {
          for (Cell cell : byOutcome.values()) {
            last = cell.lastNanos != 0 && (last == 0 || cell.lastNanos - last > 0) ? cell.lastNanos : last;
          }
        }
      }
      return last;
    }

    private Cell cell(String model, String protocol, String outcome) {
      Map<String, Map<String, Cell>> byProtocol = byModel.get(model);
      if (byProtocol == null) {
        byProtocol = byModel.computeIfAbsent(model, k -> new ConcurrentHashMap<>());
      }
      Map<String, Cell> byOutcome = byProtocol.get(protocol);
      if (byOutcome == null) {
        byOutcome = byProtocol.computeIfAbsent(protocol, k -> new ConcurrentHashMap<>());
      }
      Cell cell = byOutcome.get(outcome);
      if (cell == null) {
        cell = byOutcome.computeIfAbsent(outcome, k -> new Cell(MeterBuckets
            .latency(Timer.builder("kiln.gateway.request.duration"))
            .description("Inference request latency, from receipt to response")
            .tags("model", model, "outcome", k, "protocol", protocol)
            .register(into)));
      }
      return cell;
    }

    void routed(Router.Reason reason) {
      Counter c = routes.get(reason.ordinal());
      if (c == null) {
        // Registering is idempotent: two threads that race here get the same counter.
        c = Counter.builder("kiln.gateway.routes")
            .description("Routing decisions: pinned by a locality hint, local, spilled from a full local pool, balanced")
            .tag("reason", reason.name().toLowerCase(Locale.ROOT))
            .register(into);
        routes.set(reason.ordinal(), c);
      }
      c.increment();
    }

    void close() {
      for (Map<String, Map<String, Cell>> byProtocol : byModel.values()) {
        for (Map<String, Cell> byOutcome : byProtocol.values()) {
          for (Cell cell : byOutcome.values()) {
            into.remove(cell.timer);
            cell.counters.values().forEach(into::remove);
          }
        }
      }
      byModel.clear();
      for (int i = 0; i < routes.length(); i++) {
        Counter c = routes.getAndSet(i, null);
        if (c != null) {
          into.remove(c);
        }
      }
    }
  }

  /** One (model, protocol, outcome)'s latency histogram and its request counters by status code. */
  private static final class Cell {
    final Timer timer;
    final Map<String, Counter> counters = new ConcurrentHashMap<>();
    /** When a request of this cell last finished (nanoClock), 0 if none; the statistics extension's last_inference. */
    volatile long lastNanos;

    Cell(Timer timer) {
      this.timer = timer;
    }
  }
}
