/**
 * Per-node pools of warm model workers. A zero-resource {@link io.kiln.pools.PoolManager} actor per
 * deployment version and node queues requests, forms dynamic batches and dispatches them to detached
 * {@link io.kiln.pools.ModelWorker} actors whose DJL/PyTorch model was loaded and warmed once, in their
 * constructor. {@link io.kiln.pools.PoolClient} reaches a pool on any node; {@link io.kiln.pools.PoolLoadBoard}
 * collects every pool's load for routing. The values that cross nodes ({@link io.kiln.pools.PoolSpec},
 * requests, responses, stats, status) are encodable with the runtime's wire codec; the pools' exceptions
 * cross as themselves.
 *
 * <p>This module owns the specs of what a pool runs: {@link io.kiln.pools.ModelSpec} (with its
 * {@link io.kiln.pools.ModelSignature} of {@link io.kiln.pools.TensorSpec}s), {@link io.kiln.pools.BatchingSpec},
 * {@link io.kiln.pools.QueueSpec} and their rules ({@link io.kiln.pools.SpecRules}); serve's deployment
 * spec composes them and adds only what serve knows.
 */
package io.kiln.pools;
