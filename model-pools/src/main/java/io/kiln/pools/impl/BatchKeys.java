package io.kiln.pools.impl;

import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRepository;
import io.kiln.pools.ModelSignature;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * How one pool keys the requests it admits ({@link BatchKey}): which inputs its model takes whole rather than
 * stacked (a multiplexed pool: each model's), and, in a multiplexed pool, the model a request names. Immutable.
 */
final class BatchKeys {

  private final Set<String> whole;
  private final ModelRepository repository; // null in a pool of one model
  private final Map<String, Set<String>> wholeByModel = new HashMap<>();

  /**
   * @param signature the model's in a pool of one model, or null (then only scalars, known by their rank, are taken
   *     whole)
   * @param repository a multiplexed pool's models, or null
   */
  BatchKeys(ModelSignature signature, ModelRepository repository) {
    this.whole = BatchKey.wholeInputs(signature);
    this.repository = repository;
    if (repository != null) {
      repository.byName().forEach((name, model) -> wholeByModel.put(name, BatchKey.wholeInputs(model.signature())));
    }
  }

  /**
   * The key of a request the pool is to run ({@link BatchKey#admit}); a stream's batches only with streams, a
   * multiplexed pool's only with its model's.
   *
   * @throws InferenceException INVALID_INPUT when it cannot be batched at all, or (multiplexed) names no model;
   *     NOT_FOUND when it names a model the repository lacks
   */
  BatchKey admit(InferenceRequest request, boolean stream) {
    String model = repository == null ? null : repository.modelOf(request);
    Set<String> taken = model == null ? whole : wholeByModel.getOrDefault(model, whole);
    BatchKey key = stream ? BatchKey.admitStream(request, taken) : BatchKey.admit(request, taken);
    return model == null ? key : key.withModel(model);
  }
}
