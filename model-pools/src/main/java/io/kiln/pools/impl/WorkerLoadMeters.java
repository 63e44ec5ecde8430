package io.kiln.pools.impl;

import io.kiln.pools.MeterBuckets;
import io.kiln.pools.ModelLoadInfo;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;

/**
 * What pool workers' model loads took, per deployment, version and node (the worker's tags): the counter
 * {@code kiln.pool.worker.loads} (first loads and restarts), the histograms {@code kiln.pool.worker.load.duration}
 * (engine start-up and load, until the model could warm up) and {@code kiln.pool.worker.warmup.duration} (its
 * warm-up inferences), with the {@link MeterBuckets#LOAD} buckets, and the counter {@code kiln.pool.worker.restarts}
 * (a worker's constructor ran again after a failure, counted before it loads, so a worker that fails every load
 * still counts; registered at 0 with the first load). They stay registered after the worker closes: counts only grow.
 */
public final class WorkerLoadMeters {

  private WorkerLoadMeters() {
  }

  /** The tags of a pool's worker meters. */
  public static Tags tags(String deployment, String version, String node) {
    return Tags.of("deployment", deployment, "version", version, "node", node);
  }

  /** Counts a worker's restart. */
  public static void restarted(MeterRegistry registry, Tags tags) {
    restarts(registry, tags).increment();
  }

  private static Counter restarts(MeterRegistry registry, Tags tags) {
    return Counter.builder("kiln.pool.worker.restarts")
        .description("Pool workers restarted after a failure (a model call, load or process died)")
        .tags(tags).register(registry);
  }

  /** Counts one finished model load and records its load and warm-up times. */
  public static void loaded(MeterRegistry registry, Tags tags, ModelLoadInfo info) {
    restarts(registry, tags); // at 0 from the first load on, so that increase() sees the first restart
    Counter.builder("kiln.pool.worker.loads")
        .description("Models loaded by pool workers (first loads and restarts)")
        .tags(tags).register(registry).increment();
    MeterBuckets.load(Timer.builder("kiln.pool.worker.load.duration"))
        .description("Time a worker took to start its engine and load its model, before the warm-up")
        .tags(tags).register(registry).record(info.loadTime());
    MeterBuckets.load(Timer.builder("kiln.pool.worker.warmup.duration"))
        .description("Time a worker's warm-up inferences took, after the load")
        .tags(tags).register(registry).record(info.warmupTime());
  }
}
