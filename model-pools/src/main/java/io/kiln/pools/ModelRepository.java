package io.kiln.pools;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A multiplexed pool's models: many models served by one pool, each loaded on demand by the worker a request for
 * it lands on (Ray Serve's model multiplexing, Triton's model control). Each request names its model with the
 * parameter {@value #MODEL_ID} (the gateway sets it from {@code /v2/models/{m}/infer}); a batch is always one
 * model. Immutable; encodable with the runtime's wire codec.
 *
 * @param models the models by name, in declaration order (1..{@value #MAX_MODELS}, names unique, each
 *     {@link #NAME} and a non-streaming model)
 * @param maxModelsPerWorker how many models one worker keeps loaded at most; loading one more evicts (closes) the
 *     worker's least recently used model (1..{@value #MAX_MODELS_PER_WORKER})
 * @param maxConcurrentLoads how many loads may run at once in the pool on its node (1..{@value #MAX_CONCURRENT_LOADS});
 *     a request whose model is not loaded waits while that many loads run
 * @param maxModelBytes the memory one worker's models may hold together, as their engines report it
 *     ({@link ModelRunner#memoryBytes()}), 0 for no cap (at most {@value #MAX_MODEL_BYTES}): loading one more evicts
 *     least recently used models until it fits, and a model bigger than the cap by itself does not load. Every
 *     model's engine must report memory ({@link SpecRules#reportsMemory})
 */
public record ModelRepository(List<Entry> models, int maxModelsPerWorker, int maxConcurrentLoads, long maxModelBytes) {

  /** The request parameter naming the model of a multiplexed pool (Ray Serve's multiplexed model id). */
  public static final String MODEL_ID = "model_id";
  public static final int MAX_MODELS = 1000;
  public static final int MAX_MODELS_PER_WORKER = 256;
  public static final int MAX_CONCURRENT_LOADS = 64;
  public static final int DEFAULT_MAX_MODELS_PER_WORKER = 4;
  public static final int DEFAULT_MAX_CONCURRENT_LOADS = 2;
  /** No memory cap. */
  public static final long NO_MEMORY_CAP = 0;
  /** Upper bound on {@code maxModelBytes}: 1 TiB. */
  public static final long MAX_MODEL_BYTES = 1L << 40;
  /** Model names: what a URL path segment and an actor name hold without escaping. */
  public static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");

  /** One model of a repository: its name (what requests say) and its spec. */
  public record Entry(String name, ModelSpec model) {
    public Entry {
      Objects.requireNonNull(model, "model");
      if (name == null || !NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("name: '" + name + "' must match " + NAME.pattern());
      }
      if (model.streaming()) {
        throw new IllegalArgumentException("model '" + name + "': a streaming model cannot be multiplexed");
      }
    }
  }

  /** @throws IllegalArgumentException naming the bad field */
  public ModelRepository {
    models = List.copyOf(Objects.requireNonNull(models, "models"));
    if (models.isEmpty() || models.size() > MAX_MODELS) {
      throw new IllegalArgumentException("models: a repository holds 1.." + MAX_MODELS + " models, got " + models.size());
    }
    Set<String> seen = new HashSet<>();
    for (Entry e : models) {
      if (!seen.add(e.name())) {
        throw new IllegalArgumentException("models: duplicate model name '" + e.name() + "'");
      }
    }
    range("maxModelsPerWorker", maxModelsPerWorker, MAX_MODELS_PER_WORKER);
    range("maxConcurrentLoads", maxConcurrentLoads, MAX_CONCURRENT_LOADS);
    if (maxModelBytes < 0 || maxModelBytes > MAX_MODEL_BYTES) {
      throw new IllegalArgumentException("maxModelBytes must be in 0.." + MAX_MODEL_BYTES + ", got " + maxModelBytes);
    }
    if (maxModelBytes > 0) {
      for (Entry e : models) {
        String why = SpecRules.reportsMemory(e.model().engine());
        if (why != null) {
          throw new IllegalArgumentException("model '" + e.name() + "': " + why);
        }
      }
    }
  }

  /** A repository without a memory cap. */
  public ModelRepository(List<Entry> models, int maxModelsPerWorker, int maxConcurrentLoads) {
    this(models, maxModelsPerWorker, maxConcurrentLoads, NO_MEMORY_CAP);
  }

  /** This repository with a memory cap per worker of {@code bytes} (0: none). */
  public ModelRepository withMaxModelBytes(long bytes) {
    return new ModelRepository(models, maxModelsPerWorker, maxConcurrentLoads, bytes);
  }

  public static ModelRepository of(List<Entry> models, int maxModelsPerWorker) {
    return new ModelRepository(models, maxModelsPerWorker, DEFAULT_MAX_CONCURRENT_LOADS);
  }

  /** The model named {@code name}. */
  public Optional<ModelSpec> model(String name) {
    for (Entry e : models) {
      if (e.name().equals(name)) {
        return Optional.of(e.model());
      }
    }
    return Optional.empty();
  }

  /** The model names, in declaration order. */
  public List<String> names() {
    List<String> out = new ArrayList<>(models.size());
    models.forEach(e -> out.add(e.name()));
    return out;
  }

  /** The models by name, in declaration order. */
  public Map<String, ModelSpec> byName() {
    Map<String, ModelSpec> out = new LinkedHashMap<>();
    models.forEach(e -> out.put(e.name(), e.model()));
    return out;
  }

  /**
   * The model a request of a multiplexed pool names: its {@value #MODEL_ID} parameter.
   *
   * @throws InferenceException INVALID_INPUT without the parameter, NOT_FOUND for a model not in the repository
   */
  public String modelOf(InferenceRequest request) {
    Object id = request.parameters().get(MODEL_ID);
    if (!(id instanceof String name) || name.isEmpty()) {
      throw InferenceException.invalid("parameters." + MODEL_ID + ": a multiplexed deployment needs the model's name"
          + " (or call /v2/models/{model}/infer)");
    }
    if (model(name).isEmpty()) {
      throw InferenceException.notFound("model '" + name + "' is not in the repository");
    }
    return name;
  }

  private static void range(String field, int value, int max) {
    if (value < 1 || value > max) {
      throw new IllegalArgumentException(field + " must be in 1.." + max + ", got " + value);
    }
  }
}
