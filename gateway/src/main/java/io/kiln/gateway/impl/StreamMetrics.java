package io.kiln.gateway.impl;

import io.kiln.pools.MeterBuckets;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The streaming endpoints' meters, beside the gateway's request meters and named alike:
 * {@code kiln.gateway.stream.first.chunk} (time from the request to its first chunk) and
 * {@code kiln.gateway.stream.chunk.interval} (time between a stream's chunks), histograms tagged by model with the
 * {@link MeterBuckets#LATENCY} buckets; {@code kiln.gateway.stream.chunks} (counter, by model) and
 * {@code kiln.gateway.streams.in.flight} (gauge, open streams). The
 * active count is also the admission counter of {@link StreamDispatcher}. The streams of text generation models
 * are also timed as such ({@link LlmMetrics}). Thread-safe.
 */
final class StreamMetrics {

  private final MeterRegistry registry;
  final AtomicInteger active = new AtomicInteger();
  final LlmMetrics llm;
  private final ConcurrentHashMap<String, Timer> first = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Timer> interval = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Counter> chunks = new ConcurrentHashMap<>();

  StreamMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.llm = new LlmMetrics(registry);
    Gauge.builder("kiln.gateway.streams.in.flight", active, AtomicInteger::get)
        .description("Streams this gateway holds open").register(registry);
  }

  void chunk(String model, long sinceNanos, boolean isFirst) {
    Timer t = (isFirst ? first : interval).computeIfAbsent(model, m -> MeterBuckets.latency(Timer.builder(isFirst
            ? "kiln.gateway.stream.first.chunk" : "kiln.gateway.stream.chunk.interval"))
        .description(isFirst ? "Time from a streaming request to its first chunk" : "Time between a stream's chunks")
        .tag("model", m).register(registry));
    t.record(sinceNanos, TimeUnit.NANOSECONDS);
    chunks.computeIfAbsent(model, m -> Counter.builder("kiln.gateway.stream.chunks")
        .description("Chunks streamed to clients").tag("model", m).register(registry)).increment();
  }
}
