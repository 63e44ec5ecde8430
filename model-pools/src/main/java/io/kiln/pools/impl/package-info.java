/**
 * Implementation of the pools. {@link io.kiln.pools.impl.PoolDispatcher} is the single-threaded
 * scheduling core a pool manager hosts: it talks to workers through
 * {@link io.kiln.pools.impl.WorkerChannel}, keeps time through {@link io.kiln.pools.impl.Timers} and an
 * injected nanosecond clock, and reports worker failures to a
 * {@link io.kiln.pools.impl.WorkerFailureListener}.
 */
package io.kiln.pools.impl;
