package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelRepository;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The models a multiplexed worker holds: at most {@code maxModelsPerWorker} runners, least recently used first.
 * A batch's model ({@link ModelRepository#modelOf}) is loaded on a miss through the same loader as a single-model
 * worker's ({@link RunnerLoader}: engine checks and warm-up included), evicting (closing) the least recently used
 * runner when the worker is full; a hit only moves it to the front. Each batch and each explicit
 * {@link #load}/{@link #unload} changes the order exactly as {@link ModelAffinity} does on the manager's side.
 *
 * <p><b>Memory cap</b> ({@link ModelRepository#maxModelBytes()} &gt; 0): once a model loaded, it reports what it holds
 * ({@link ModelRunner#memoryBytes()}; engines can tell only once the model is in memory, so the worker briefly holds
 * it beside those it then evicts). One bigger than the cap on its own is closed again and its batch or load fails
 * INTERNAL saying so; otherwise least recently used models are closed until the held total fits. The manager's
 * mirror ({@link ModelAffinity}) evicts by count only, so after a memory eviction it may send a batch as a hit to a
 * worker that loads it again: counted as a hit, served correctly.
 *
 * <p><b>Threading:</b> not thread-safe; the worker's own serial thread calls it. Loads block that thread.
 *
 * <p><b>Errors:</b> a model that fails to load fails its batch with an INTERNAL {@link InferenceException} naming the
 * model and the cause: the worker stays up and keeps its other models.
 */
public final class WorkerModels implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(WorkerModels.class);
  /** Counter (tags deployment, version, node): models a worker closed to fit another under the memory cap. */
  public static final String MEMORY_EVICTIONS = "kiln.pool.multiplex.memory.evictions";

  private final ModelRepository repository;
  private final Function<ModelSpec, ModelRunner> loader;
  private final LongSupplier clock;
  private final MeterRegistry registry; // null when the node has none
  private final Tags tags;
  private final LinkedHashMap<String, ModelRunner> runners = new LinkedHashMap<>(16, 0.75f, true);
  private int loads;
  private int memoryEvictions;

  public WorkerModels(ModelRepository repository, List<Integer> gpuIndices, MeterRegistry registry, Tags tags) {
    this(repository, spec -> RunnerLoader.load(spec, gpuIndices, System::nanoTime), System::nanoTime, registry, tags);
  }

  WorkerModels(ModelRepository repository, Function<ModelSpec, ModelRunner> loader, LongSupplier clock,
               MeterRegistry registry, Tags tags) {
    this.repository = repository;
    this.loader = loader;
    this.clock = clock;
    this.registry = registry;
    this.tags = tags;
  }

  /** Runs one batch (all of one model, see {@link ModelRepository#modelOf}) on its model, loading it first on a miss. */
  public List<List<Tensor>> infer(List<InferenceRequest> batch) {
    String name = repository.modelOf(batch.get(0));
    return runner(name).infer(batch);
  }

  /** Loads {@code name} unless held (then it only becomes most recently used); returns whether it loaded it. */
  public boolean load(String name) {
    if (repository.model(name).isEmpty()) {
      throw InferenceException.notFound("model '" + name + "' is not in the repository");
    }
    boolean held = runners.containsKey(name);
    runner(name);
    return !held;
  }

  /** Closes {@code name} if held; returns whether it was. */
  public boolean unload(String name) {
    ModelRunner r = runners.remove(name);
    if (r == null) {
      return false;
    }
    closeQuietly(name, r);
    return true;
  }

  /** The models held, least recently used first. */
  public List<String> loaded() {
    return new ArrayList<>(runners.keySet());
  }

  /** Loads done by this worker since it started. */
  public int loads() {
    return loads;
  }

  private ModelRunner runner(String name) {
    ModelRunner r = runners.get(name);
    if (r != null) {
      return r;
    }
    ModelSpec spec = repository.model(name).orElseThrow();
    long start = clock.getAsLong();
    try {
      r = loader.apply(spec);
    } catch (ModelLoadException | IllegalArgumentException e) {
      record(start, false);
      throw new InferenceException(InferenceException.Kind.INTERNAL,
          "model '" + name + "' failed to load: " + e.getMessage(), e);
    }
    loads++;
    record(start, true);
    long cap = repository.maxModelBytes();
    if (cap > 0) {
      long size = memoryOf(name, r, true);
      if (size > cap) {
        closeQuietly(name, r);
        throw new InferenceException(InferenceException.Kind.INTERNAL, "model '" + name + "' holds " + mib(size)
            + " as its engine reports, more than the repository's max_memory_mb of " + mib(cap) + " per worker: it"
            + " cannot load on any worker");
      }
    }
    runners.put(name, r);
    while (runners.size() > repository.maxModelsPerWorker()) {
      evictLru(false);
    }
    // The new model is the most recently used: evicting from the other end never drops it, and it fits alone.
    while (cap > 0 && runners.size() > 1 && held() > cap) {
      evictLru(true);
    }
    return r;
  }

  /** Memory the held models report now (a model that stopped reporting counts as nothing). */
  public long held() {
    long total = 0;
    for (Map.Entry<String, ModelRunner> e : runners.entrySet()) {
      total += memoryOf(e.getKey(), e.getValue(), false);
    }
    return total;
  }

  /** Models dropped to make room under the memory cap since the worker started. */
  public int memoryEvictions() {
    return memoryEvictions;
  }

  private void evictLru(boolean forMemory) {
    Map.Entry<String, ModelRunner> lru = runners.entrySet().iterator().next();
    runners.remove(lru.getKey());
    closeQuietly(lru.getKey(), lru.getValue());
    if (forMemory) {
      memoryEvictions++;
      if (registry != null) {
        registry.counter(MEMORY_EVICTIONS, tags).increment();
      }
    }
  }

  private long memoryOf(String name, ModelRunner r, boolean required) {
    java.util.OptionalLong bytes = r.memoryBytes();
    if (bytes.isPresent()) {
      return bytes.getAsLong();
    }
    if (required) { // validation keeps such engines out of capped repositories; never enforce a cap by guessing
      closeQuietly(name, r);
      throw new InferenceException(InferenceException.Kind.INTERNAL, "model '" + name + "' (engine "
          + r.spec().engine() + ") did not report its memory, so the repository's max_memory_mb cannot be enforced");
    }
    return 0;
  }

  private static String mib(long bytes) {
    return String.format(java.util.Locale.ROOT, "%.3f MiB", bytes / (1024.0 * 1024.0));
  }

  private void record(long start, boolean ok) {
    if (registry != null) {
      MultiplexMeters.loaded(registry, tags, Duration.ofNanos(clock.getAsLong() - start), ok);
    }
  }

  private static void closeQuietly(String name, ModelRunner r) {
    try {
      r.close();
    } catch (RuntimeException e) {
      LOG.warn("closing model {} failed: {}", name, e.toString());
    }
  }

  @Override
  public void close() {
    runners.forEach(WorkerModels::closeQuietly);
    runners.clear();
  }
}
