/**
 * Plug-in points of the model pools: {@link io.kiln.pools.spi.Engine}, an engine that loads and runs models
 * (its contract is in its class comment), and {@link io.kiln.pools.spi.Engines}, the registry of the engines
 * {@link java.util.ServiceLoader} finds on the class path.
 */
package io.kiln.pools.spi;
