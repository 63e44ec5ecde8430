/**
 * Per-node pools of warm model workers. A zero-resource {@code PoolManager} actor per deployment
 * version and node queues requests, forms dynamic batches and dispatches them to detached
 * {@code ModelWorker} actors whose DJL/PyTorch model was loaded and warmed once, in their constructor.
 */
package io.kiln.pools;
