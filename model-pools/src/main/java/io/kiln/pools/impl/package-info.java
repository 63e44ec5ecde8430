/**
 * Implementation of the pools. {@link io.kiln.pools.impl.PoolDispatcher} is the single-threaded
 * scheduling core a pool manager hosts: it talks to workers through
 * {@link io.kiln.pools.impl.WorkerChannel} (for actors: {@link io.kiln.pools.impl.ActorWorkerChannel}),
 * keeps time through {@link io.kiln.pools.impl.Timers} (on Vert.x: {@link io.kiln.pools.impl.VertxTimers})
 * and an injected nanosecond clock, and reports worker failures to a
 * {@link io.kiln.pools.impl.WorkerFailureListener}. Its parts: {@link io.kiln.pools.impl.BatchFormer} (when a batch
 * goes and what it holds), {@link io.kiln.pools.impl.BatchHandOff} (what a worker is sent; a failed batch's
 * re-queues), {@link io.kiln.pools.impl.Settlements} (how requests end, completions deferred) with its
 * deadlines on the runtime's {@link io.kiln.runtime.time.Deadlines} (every deadline on one timer). {@link io.kiln.pools.impl.PoolWorkers} owns a manager's
 * worker actors (adoption, restarts, scaling); {@link io.kiln.pools.impl.LoadReporter} publishes its load.
 * {@link io.kiln.pools.impl.PoolsJacksonModule} and {@link io.kiln.pools.impl.PoolErrorCodec} carry the
 * pools' values and exceptions across nodes (registered through {@code META-INF/services}).
 */
package io.kiln.pools.impl;
