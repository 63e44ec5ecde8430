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
 */
public record WorkerSpec(String deployment, String version, String node, int index, ModelSpec model) {

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
