package io.kiln.serve;

import io.kiln.pools.BatchingSpec;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelRepository;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.PoolNames;
import io.kiln.pools.PoolSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.serve.impl.Rules;
import java.util.Objects;
import java.util.Optional;

/**
 * One deployment: a model version served by a pool of warm workers on every node it selects. The desired
 * state the controller stores (as JSON, see {@link SpecJson}) and reconciles. It composes the pools' own
 * specs (model, batching, queue, health: model-pools owns them and their rules) with what only serve
 * knows: the version, where pools go and how many workers they run ({@link PoolPlacement}), autoscaling.
 * Immutable; single-field and cross-field rules are checked on construction ({@link IllegalArgumentException} naming the field), so
 * a spec built in code obeys the same rules as one loaded by {@link DeploymentLoader}.
 *
 * @param name DNS-label-like name (lowercase letters, digits, '-', at most 63), the model name clients use
 * @param version version string (letters, digits, '.', '_', '-'); part of every actor name, so a new
 *     version never adopts an old version's actors
 * @param model what to load (its warm-up batches at most {@code batching.maxBatchSize})
 * @param pool how many workers, where, with what resources
 * @param batching dynamic batching ({@code maxBatchSize} at most {@code queue.maxQueued})
 * @param queue the bounded queue of each node's pool manager
 * @param autoscaling per-node autoscaling; empty: each node runs exactly the pool's worker count
 * @param health how each pool probes its workers
 * @param repository a multiplexed deployment's models (each request names one; {@code model} is then the first of
 *     them), or null for a deployment of one model
 */
public record DeploymentSpec(String name, String version, ModelSpec model, PoolPlacement pool, BatchingSpec batching,
                             QueueSpec queue, Optional<AutoscalingSpec> autoscaling, HealthSpec health,
                             ModelRepository repository) {

  /** A deployment of one model. */
  public DeploymentSpec(String name, String version, ModelSpec model, PoolPlacement pool, BatchingSpec batching,
                        QueueSpec queue, Optional<AutoscalingSpec> autoscaling, HealthSpec health) {
    this(name, version, model, pool, batching, queue, autoscaling, health, null);
  }

  /** A multiplexed deployment: its {@code model} is the repository's first (see {@link ModelRepository}). */
  public static DeploymentSpec multiplexed(String name, String version, ModelRepository repository, PoolPlacement pool,
                                           BatchingSpec batching, QueueSpec queue,
                                           Optional<AutoscalingSpec> autoscaling, HealthSpec health) {
    return new DeploymentSpec(name, version, repository.models().get(0).model(), pool, batching, queue, autoscaling,
        health, repository);
  }

  public DeploymentSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(pool, "pool");
    Objects.requireNonNull(batching, "batching");
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(autoscaling, "autoscaling");
    Objects.requireNonNull(health, "health");
    Rules.require("name", Rules.name(name));
    Rules.require("version", Rules.version(version));
    Rules.require("batching.max_batch_size", Rules.batchWithinQueue(batching.maxBatchSize(), queue.maxQueued()));
    if (repository != null && !repository.models().get(0).model().equals(model)) {
      throw new IllegalArgumentException("model: a multiplexed deployment's model is its repository's first");
    }
    var sizes = model.warmupBatchSizes();
    for (int i = 0; i < sizes.size(); i++) {
      Rules.require("model.warmup.batch_sizes[" + i + "]",
          Rules.warmupWithinBatch(sizes.get(i), batching.maxBatchSize()));
    }
    if (autoscaling.isPresent() && pool.workers() instanceof PoolPlacement.Total) {
      throw new IllegalArgumentException("pool.num_workers: a cluster-wide total does not combine with autoscaling");
    }
    if (autoscaling.isPresent() && pool.workers() instanceof PoolPlacement.PerNode n) {
      Rules.require("autoscaling.min_workers", Rules.workersCoverMin(autoscaling.get().minWorkers(), n.count()));
    }
  }

  /** {@code name@version}, the deployment's key in actor names, the desired-state map and plans. */
  public String id() {
    return PoolNames.deployment(name, version);
  }

  /** The definition of this deployment's pool on {@code nodeId}, starting with {@code workers} workers. */
  public PoolSpec poolOn(String nodeId, int workers) {
    return new PoolSpec(name, version, nodeId, model, PoolConfig.of(batching, queue), workers,
        pool.workerResources(), pool.maxRestarts(), health, repository);
  }

  /** Whether requests name one of several models ({@link #repository()}). */
  public boolean multiplexed() {
    return repository != null;
  }
}
