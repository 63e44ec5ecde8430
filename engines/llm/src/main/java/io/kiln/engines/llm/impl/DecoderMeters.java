package io.kiln.engines.llm.impl;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;
import java.util.function.Supplier;

/**
 * A decoder runner's meters: gauges of its sequences ({@code kiln_decoder_sequences{state=running|waiting}}) and KV
 * blocks ({@code kiln_decoder_kv_blocks{state=used|available}}, {@code kiln_decoder_kv_cache_usage_ratio}), counters
 * of its tokens, prefix-cache lookups and hits (in tokens: {@code rate(hit) / rate(lookup)} is the hit rate) and
 * preemptions. They read the runner's last published {@link DecoderStats} (the runner's state belongs to its worker
 * thread; a scrape runs on another), so they lag by at most one step. Registered once; {@link #remove} on close.
 */
final class DecoderMeters {

  private final MeterRegistry registry;
  private final List<Meter> meters = new ArrayList<>();

  DecoderMeters(MeterRegistry registry, Tags tags, Supplier<DecoderStats> stats) {
    this.registry = registry;
    gauge("kiln.decoder.sequences", tags.and("state", "running"), stats, DecoderStats::running,
        "sequences holding KV blocks");
    gauge("kiln.decoder.sequences", tags.and("state", "waiting"), stats, DecoderStats::waiting,
        "sequences waiting for admission");
    gauge("kiln.decoder.kv.blocks", tags.and("state", "used"), stats, DecoderStats::kvBlocksUsed,
        "KV blocks referenced by sequences");
    gauge("kiln.decoder.kv.blocks", tags.and("state", "available"), stats, DecoderStats::kvBlocksAvailable,
        "KV blocks free or evictable");
    gauge("kiln.decoder.kv.cache.usage.ratio", tags, stats, DecoderStats::kvUsageRatio,
        "share of the KV cache's blocks referenced by sequences, 0 to 1");
    gauge("kiln.decoder.kv.blocks.cached", tags, stats, DecoderStats::kvBlocksCached,
        "full KV blocks the prefix cache holds");
    counter("kiln.decoder.prefix.cache.hit.tokens", tags, stats, DecoderStats::prefixCacheHitTokens,
        "prompt tokens found in the prefix cache");
    counter("kiln.decoder.prefix.cache.lookup.tokens", tags, stats, DecoderStats::prefixCacheLookupTokens,
        "tokens of admitted sequences looked up in the prefix cache (0 with the cache off)");
    counter("kiln.decoder.preemptions", tags, stats, DecoderStats::preemptions,
        "sequences preempted to free KV blocks");
    counter("kiln.decoder.tokens", tags.and("kind", "prompt"), stats, DecoderStats::promptTokens,
        "prompt tokens of opened requests");
    counter("kiln.decoder.tokens", tags.and("kind", "generation"), stats, DecoderStats::generationTokens,
        "tokens generated");
    counter("kiln.decoder.steps", tags, stats, DecoderStats::steps, "engine steps");
  }

  private void gauge(String name, Tags tags, Supplier<DecoderStats> stats, ToDoubleFunction<DecoderStats> f,
                     String description) {
    meters.add(Gauge.builder(name, stats, s -> f.applyAsDouble(s.get())).tags(tags).description(description)
        .strongReference(true).register(registry));
  }

  private void counter(String name, Tags tags, Supplier<DecoderStats> stats, ToDoubleFunction<DecoderStats> f,
                       String description) {
    meters.add(FunctionCounter.builder(name, stats, s -> f.applyAsDouble(s.get())).tags(tags)
        .description(description).register(registry));
  }

  void remove() {
    meters.forEach(registry::remove);
    meters.clear();
  }
}
