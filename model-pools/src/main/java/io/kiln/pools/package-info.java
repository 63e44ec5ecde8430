/**
 * Per-node pools of warm model workers. A zero-resource {@link io.kiln.pools.PoolManager} actor per
 * deployment version and node queues requests, forms dynamic batches and dispatches them to detached
 * {@link io.kiln.pools.ModelWorker} actors whose DJL/PyTorch model was loaded and warmed once, in their
 * constructor. {@link io.kiln.pools.PoolClient} reaches a pool on any node; {@link io.kiln.pools.PoolLoadBoard}
 * collects every pool's load for routing. The values that cross nodes ({@link io.kiln.pools.PoolSpec},
 * requests, responses, stats, status) are encodable with the runtime's wire codec; the pools' exceptions
 * cross as themselves.
 */
package io.kiln.pools;
