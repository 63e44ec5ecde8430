package io.kiln.pipelines.graphs;

import io.kiln.pools.MeterBuckets;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One graph's meters on this node, with the fixed {@link MeterBuckets} latency buckets: {@code kiln.graph.requests}
 * (counter by {@code outcome}: ok, cancelled, or the failure's kind), {@code kiln.graph.duration} (timer, whole
 * requests), {@code kiln.graph.step.duration} (timer by {@code step} and {@code deployment}: one step's pool call,
 * queueing and batching in that pool included) and {@code kiln.graph.requests.in.flight}. Each step's pool keeps its
 * own {@code kiln.pool.*} meters as for any request. Thread-safe; recording allocates nothing once a meter exists.
 */
final class GraphMeters {

  private final MeterRegistry registry;
  private final String graph;
  private final Timer duration;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final ConcurrentHashMap<String, Counter> outcomes = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Timer> steps = new ConcurrentHashMap<>();

  GraphMeters(MeterRegistry registry, String graph) {
    this.registry = registry;
    this.graph = graph;
    this.duration = MeterBuckets.latency(Timer.builder("kiln.graph.duration"))
        .description("Time a graph request took, all its steps").tag("graph", graph).register(registry);
    Gauge.builder("kiln.graph.requests.in.flight", inFlight, AtomicInteger::get)
        .description("Graph requests being executed on this node").tag("graph", graph).register(registry);
  }

  void started() {
    inFlight.incrementAndGet();
  }

  int inFlight() {
    return inFlight.get();
  }

  void ended(String outcome, long nanos) {
    inFlight.decrementAndGet();
    duration.record(nanos, TimeUnit.NANOSECONDS);
    outcomes.computeIfAbsent(outcome, o -> Counter.builder("kiln.graph.requests")
        .description("Graph requests answered on this node, by outcome").tag("graph", graph).tag("outcome", o)
        .register(registry)).increment();
  }

  void step(String step, String deployment, long nanos) {
    steps.computeIfAbsent(step + "\0" + deployment, k -> MeterBuckets.latency(Timer.builder("kiln.graph.step.duration"))
        .description("Time one step of a graph request took: its pool call, queueing and batching included")
        .tag("graph", graph).tag("step", step).tag("deployment", deployment).register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }
}
