package io.kiln.pools;

import java.util.Objects;

/**
 * What one {@link ModelWorker} loads and who it is: the constructor argument of the worker actor named
 * {@link PoolNames#worker}. Immutable; encodable with the runtime's wire codec.
 *
 * @param deployment the deployment's name
 * @param version the deployment's version
 * @param node the node the worker is pinned to
 * @param index the worker's index in its pool (0-based)
 * @param model the model it loads and warms in its constructor
 * @param repository the models of a multiplexed worker (loaded on demand; {@code model} is then not loaded), or null
 */
public record WorkerSpec(String deployment, String version, String node, int index, ModelSpec model,
                         ModelRepository repository) {

  /** The spec of a worker of one model. */
  public WorkerSpec(String deployment, String version, String node, int index, ModelSpec model) {
    this(deployment, version, node, index, model, null);
  }


  /** @throws IllegalArgumentException or NullPointerException naming the bad field */
  public WorkerSpec {
    Objects.requireNonNull(model, "model");
    PoolNames.worker(deployment, version, node, index);
  }

  /** The worker's actor name. */
  public String actorName() {
    return PoolNames.worker(deployment, version, node, index);
  }
}
