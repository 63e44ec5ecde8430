package io.kiln.control.impl;

import io.kiln.control.impl.RequestSampler.ModelDelta;
import io.kiln.control.impl.RequestSampler.Totals;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.ToDoubleFunction;

/**
 * This node's text generation figures, read from the meters it already has once a second by its
 * {@link RequestSampler}: the gateway's {@code kiln.llm.*} meters (time to first token and inter-token histograms,
 * generated tokens; tagged {@code model}) and the decoder workers' {@code kiln.decoder.*} meters (sequences running and
 * waiting, KV blocks used and available, prefix-cache hit and lookup tokens, preemptions; tagged {@code deployment}),
 * joined by name: a model served by the OpenAI API or generate is its deployment. Counters and histograms become
 * deltas since the previous read (so nodes add up); gauges are kept as read. Not thread-safe: its sampler's lock
 * guards it.
 */
final class LlmSampler {

  static final String FIRST_TOKEN = "kiln.llm.time.to.first.token";
  static final String INTER_TOKEN = "kiln.llm.inter.token.latency";
  static final String GENERATION_TOKENS = "kiln.llm.generation.tokens";
  static final String SEQUENCES = "kiln.decoder.sequences";
  static final String KV_BLOCKS = "kiln.decoder.kv.blocks";
  static final String PREFIX_HITS = "kiln.decoder.prefix.cache.hit.tokens";
  static final String PREFIX_LOOKUPS = "kiln.decoder.prefix.cache.lookup.tokens";
  static final String PREEMPTIONS = "kiln.decoder.preemptions";

  /**
   * One model's text generation in one second on one node.
   *
   * @param firstToken time-to-first-token observations of the second (null: none)
   * @param interToken inter-token gaps of the second (null: none)
   * @param generationTokens tokens generated in the second
   * @param decoder whether this node runs the model's decoder (the gauges below are then its)
   * @param running sequences running now (all of the node's workers)
   * @param waiting sequences waiting now
   * @param kvUsed KV blocks in use now
   * @param kvTotal KV blocks of the caches
   * @param prefixHits prompt tokens found in the prefix cache in the second
   * @param prefixLookups tokens looked up in the prefix cache in the second
   * @param preemptions sequences preempted in the second
   */
  record LlmDelta(ModelDelta firstToken, ModelDelta interToken, long generationTokens, boolean decoder,
                  double running, double waiting, double kvUsed, double kvTotal, long prefixHits, long prefixLookups,
                  long preemptions) {
  }

  /** A model's cumulative figures at one read. */
  private record Read(Totals firstToken, Totals interToken, double generationTokens, boolean decoder, double running,
                      double waiting, double kvUsed, double kvTotal, double prefixHits, double prefixLookups,
                      double preemptions) {
  }

  private final MeterRegistry registry;
  private Map<String, Read> previous; // null before the first read: the baseline

  LlmSampler(MeterRegistry registry) {
    this.registry = registry;
  }

  /** The deltas since the previous call, by model (empty on the first call, the baseline). */
  Map<String, LlmDelta> sample() {
    Map<String, Read> now = read();
    Map<String, Read> before = previous;
    previous = now;
    if (before == null) {
      return Map.of();
    }
    Map<String, LlmDelta> out = new HashMap<>();
    now.forEach((model, r) -> {
      Read b = before.get(model);
      ModelDelta first = r.firstToken() == null ? null
          : RequestSampler.delta(r.firstToken(), b == null ? null : b.firstToken());
      ModelDelta inter = r.interToken() == null ? null
          : RequestSampler.delta(r.interToken(), b == null ? null : b.interToken());
      long tokens = counted(r.generationTokens(), b == null ? 0 : b.generationTokens());
      long hits = counted(r.prefixHits(), b == null ? 0 : b.prefixHits());
      long lookups = counted(r.prefixLookups(), b == null ? 0 : b.prefixLookups());
      long preempted = counted(r.preemptions(), b == null ? 0 : b.preemptions());
      if (r.decoder() || first != null || inter != null || tokens > 0) {
        out.put(model, new LlmDelta(first, inter, tokens, r.decoder(), r.running(), r.waiting(), r.kvUsed(),
            r.kvTotal(), hits, lookups, preempted));
      }
    });
    return Map.copyOf(out);
  }

  /** A counter's increase; one that went down (its meter re-registered) counts from 0. */
  private static long counted(double now, double before) {
    return Math.round(now >= before ? now - before : now);
  }

  private Map<String, Read> read() {
    Map<String, Totals> first = timers(FIRST_TOKEN);
    Map<String, Totals> inter = timers(INTER_TOKEN);
    Map<String, Double> tokens = new HashMap<>();
    registry.find(GENERATION_TOKENS).counters().forEach(c -> add(tokens, c.getId().getTag("model"), c.count()));
    Map<String, Double> running = gauges(SEQUENCES, "running");
    Map<String, Double> waiting = gauges(SEQUENCES, "waiting");
    Map<String, Double> used = gauges(KV_BLOCKS, "used");
    Map<String, Double> available = gauges(KV_BLOCKS, "available");
    Map<String, Double> hits = functionCounters(PREFIX_HITS);
    Map<String, Double> lookups = functionCounters(PREFIX_LOOKUPS);
    Map<String, Double> preemptions = functionCounters(PREEMPTIONS);
    Set<String> models = new HashSet<>(first.keySet());
    models.addAll(inter.keySet());
    models.addAll(tokens.keySet());
    models.addAll(running.keySet());
    Map<String, Read> out = new HashMap<>();
    for (String m : models) {
      double u = used.getOrDefault(m, 0.0);
      out.put(m, new Read(first.get(m), inter.get(m), tokens.getOrDefault(m, 0.0), running.containsKey(m),
          running.getOrDefault(m, 0.0), waiting.getOrDefault(m, 0.0), u, u + available.getOrDefault(m, 0.0),
          hits.getOrDefault(m, 0.0), lookups.getOrDefault(m, 0.0), preemptions.getOrDefault(m, 0.0)));
    }
    return out;
  }

  private Map<String, Totals> timers(String name) {
    Map<String, Totals> out = new HashMap<>();
    for (Timer t : registry.find(name).timers()) {
      String model = t.getId().getTag("model");
      if (model != null) {
        out.merge(model, RequestSampler.totals(t, true), RequestSampler::sum);
      }
    }
    return out;
  }

  /** A decoder gauge of {@code state}, summed over the workers of each deployment. */
  private Map<String, Double> gauges(String name, String state) {
    Map<String, Double> out = new HashMap<>();
    for (Gauge g : registry.find(name).tag("state", state).gauges()) {
      add(out, g.getId().getTag("deployment"), finite(g, Gauge::value));
    }
    return out;
  }

  private Map<String, Double> functionCounters(String name) {
    Map<String, Double> out = new HashMap<>();
    for (FunctionCounter c : registry.find(name).functionCounters()) {
      add(out, c.getId().getTag("deployment"), finite(c, FunctionCounter::count));
    }
    return out;
  }

  private static <M> double finite(M meter, ToDoubleFunction<M> value) {
    double v = value.applyAsDouble(meter);
    return Double.isFinite(v) ? v : 0; // a gauge whose runner closed reads NaN
  }

  private static void add(Map<String, Double> into, String model, double v) {
    if (model != null) {
      into.merge(model, v, Double::sum);
    }
  }
}
