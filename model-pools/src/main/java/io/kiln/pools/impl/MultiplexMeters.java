package io.kiln.pools.impl;

import io.kiln.pools.MeterBuckets;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;

/**
 * A multiplexed pool's meters, tagged like the pool's own (deployment, version, node). The pool manager's side
 * counts what its dispatcher decides: {@code kiln.pool.multiplex.hits} (a batch went to a worker holding its model),
 * {@code kiln.pool.multiplex.misses} (it went to one that loads the model first), {@code kiln.pool.multiplex.evictions}
 * (a worker dropped its least recently used model to make room) and the gauge {@code kiln.pool.multiplex.loaded}
 * (distinct models loaded on the node's pool). The workers' side records what loading took:
 * {@code kiln.pool.multiplex.loads} (tagged {@code outcome} ok/failed) and the timer
 * {@code kiln.pool.multiplex.load.duration} (load and warm-up, a histogram with the {@link MeterBuckets#LOAD} buckets). The manager's meters are removed when
 * it closes; the workers' stay, as {@code kiln.pool.worker.loads} does.
 */
public final class MultiplexMeters implements AutoCloseable {

  private final MeterRegistry registry;
  private final Tags tags;
  private final List<Meter> owned = new ArrayList<>();
  private final Counter hits;
  private final Counter misses;
  private final Counter evictions;

  private MultiplexMeters(MeterRegistry registry, Tags tags) {
    this.registry = registry;
    this.tags = tags;
    this.hits = own(Counter.builder("kiln.pool.multiplex.hits")
        .description("Batches sent to a worker that held their model").tags(tags).register(registry));
    this.misses = own(Counter.builder("kiln.pool.multiplex.misses")
        .description("Batches sent to a worker that loads their model first").tags(tags).register(registry));
    this.evictions = own(Counter.builder("kiln.pool.multiplex.evictions")
        .description("Models a worker dropped, least recently used first, to load another").tags(tags)
        .register(registry));
  }

  /** The manager's meters. */
  static MultiplexMeters forPool(MeterRegistry registry, Tags tags) {
    return new MultiplexMeters(registry, tags);
  }

  void loadedModels(IntSupplier loaded) {
    // Strong: the supplier is a method reference only this gauge holds; a weak one is collected and reads NaN.
    own(Gauge.builder("kiln.pool.multiplex.loaded", loaded, IntSupplier::getAsInt).strongReference(true)
        .description("Distinct models loaded by the pool's workers").tags(tags).register(registry));
  }

  void hit() {
    hits.increment();
  }

  void miss() {
    misses.increment();
  }

  void evicted() {
    evictions.increment();
  }

  /** Records one load on a worker: how long it took and whether it worked. */
  public static void loaded(MeterRegistry registry, Tags tags, Duration took, boolean ok) {
    Counter.builder("kiln.pool.multiplex.loads").description("Models loaded on demand by multiplexed workers")
        .tags(tags).tag("outcome", ok ? "ok" : "failed").register(registry).increment();
    MeterBuckets.load(Timer.builder("kiln.pool.multiplex.load.duration"))
        .description("Time to load and warm a multiplexed model").tags(tags).register(registry).record(took);
  }

  @Override
  public void close() {
    owned.forEach(registry::remove);
    owned.clear();
  }

  private <M extends Meter> M own(M meter) {
    owned.add(meter);
    return meter;
  }
}
