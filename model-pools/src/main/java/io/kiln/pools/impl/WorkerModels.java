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
 * <p><b>Threading:</b> not thread-safe; the worker's own serial thread calls it. Loads block that thread.
 *
 * <p><b>Errors:</b> a model that fails to load fails its batch with an INTERNAL {@link InferenceException} naming the
 * model and the cause: the worker stays up and keeps its other models.
 */
public final class WorkerModels implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(WorkerModels.class);

  private final ModelRepository repository;
  private final Function<ModelSpec, ModelRunner> loader;
  private final LongSupplier clock;
  private final MeterRegistry registry; // null when the node has none
  private final Tags tags;
  private final LinkedHashMap<String, ModelRunner> runners = new LinkedHashMap<>(16, 0.75f, true);
  private int loads;

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
    runners.put(name, r);
    while (runners.size() > repository.maxModelsPerWorker()) {
      Map.Entry<String, ModelRunner> lru = runners.entrySet().iterator().next();
      runners.remove(lru.getKey());
      closeQuietly(lru.getKey(), lru.getValue());
    }
    return r;
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
