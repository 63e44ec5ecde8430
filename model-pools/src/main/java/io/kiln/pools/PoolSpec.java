package io.kiln.pools;

import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.Resources;
import java.util.Objects;

/**
 * Everything a {@link PoolManager} needs to run one deployment version's pool on one node: the
 * constructor argument of the manager actor. Immutable and validated on construction; the controller
 * creates managers on other nodes, so it is encodable with the runtime's wire codec (JSON or CBOR).
 *
 * @param deployment the deployment's name (the model name clients use)
 * @param version the deployment's version; part of every actor name of the pool
 * @param nodeId the node the manager and its workers are pinned to
 * @param model what every worker loads
 * @param config queueing and batching
 * @param workers how many workers the manager starts with (live workers of an earlier manager beyond
 *     this count are adopted too, so a scaled-up pool survives a manager restart)
 * @param workerResources what each worker reserves on the node ({@code {CPU: 1}}, {@code {GPU: 1}})
 * @param workerMaxRestarts times a worker is restarted (its model reloaded) after failures; -1 = unlimited
 * @param repository the models of a multiplexed pool, or null for a pool of one model ({@code model}); a
 *     multiplexed pool's {@code model} is its first model (see {@link ModelRepository})
 * @param health how often the manager probes each worker in rotation, and how long a probe may take before
 *     the worker counts as stuck and is restarted
 */
public record PoolSpec(String deployment, String version, String nodeId, ModelSpec model, PoolConfig config,
                       int workers, Resources workerResources, int workerMaxRestarts, HealthSpec health,
                       ModelRepository repository) {

  /** Most workers one pool may have on one node. */
  public static final int MAX_WORKERS = 1024;

  /** @throws IllegalArgumentException or NullPointerException naming the bad field */
  public PoolSpec {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(workerResources, "workerResources");
    Objects.requireNonNull(health, "health");
    if (workers < 0 || workers > MAX_WORKERS) {
      throw new IllegalArgumentException("workers must be in 0.." + MAX_WORKERS + ", got " + workers);
    }
    if (workerMaxRestarts < -1) {
      throw new IllegalArgumentException("workerMaxRestarts must be >= -1 (-1 = unlimited), got " + workerMaxRestarts);
    }
    // Actor names are event-bus addresses: let the runtime's own rules judge the longest one.
    ActorOptions.builder().namespace(PoolManager.NAMESPACE)
        .name(PoolNames.worker(deployment, version, nodeId, MAX_WORKERS - 1)).build();
  }

  /** A pool of one model ({@code repository} null). */
  public PoolSpec(String deployment, String version, String nodeId, ModelSpec model, PoolConfig config, int workers,
                  Resources workerResources, int workerMaxRestarts, HealthSpec health) {
    this(deployment, version, nodeId, model, config, workers, workerResources, workerMaxRestarts, health, null);
  }

  /** A pool probing its workers by {@link HealthSpec#DEFAULT}. */
  public PoolSpec(String deployment, String version, String nodeId, ModelSpec model, PoolConfig config, int workers,
                  Resources workerResources, int workerMaxRestarts) {
    this(deployment, version, nodeId, model, config, workers, workerResources, workerMaxRestarts, HealthSpec.DEFAULT);
  }

  /** Whether the pool serves a {@link ModelRepository} (many models, loaded on demand). */
  public boolean multiplexed() {
    return repository != null;
  }

  /** The manager's actor name, {@code kiln/pool/<deployment>@<version>/<nodeId>}. */
  public String managerName() {
    return PoolNames.poolManager(deployment, version, nodeId);
  }

  /** The spec of worker {@code index}. */
  public WorkerSpec worker(int index) {
    return new WorkerSpec(deployment, version, nodeId, index, model, repository);
  }

  public PoolSpec withWorkers(int n) {
    return new PoolSpec(deployment, version, nodeId, model, config, n, workerResources, workerMaxRestarts, health,
        repository);
  }
}
