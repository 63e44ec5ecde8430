/**
 * Plug-in points of the model pools: {@link io.kiln.pools.spi.Engine}, an engine that loads and runs models
 * (its contract is in its class comment), and {@link io.kiln.pools.spi.Engines}, the registry of the engines
 * {@link java.util.ServiceLoader} finds on the class path. What an engine's jar builds on: the fields its checks
 * judge ({@link io.kiln.pools.spi.SpecFields}, {@link io.kiln.pools.spi.SpecProblem},
 * {@link io.kiln.pools.spi.EngineChecks}) and the base of its runners ({@link io.kiln.pools.spi.AbstractModelRunner}
 * with {@link io.kiln.pools.spi.EngineGuard}, {@link io.kiln.pools.spi.SpecMismatchException},
 * {@link io.kiln.pools.spi.ByteElements}). Writing an engine: docs/engines.md.
 */
package io.kiln.pools.spi;
