/**
 * What the gateway needs from the rest of Kiln: the model directory (metadata, readiness), the pool
 * directory (where pools are, their load, how to send them requests) and a data locator (which node
 * holds a data key). Implementations must never block; each interface states its contract.
 */
package io.kiln.gateway.spi;
