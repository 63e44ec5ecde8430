/**
 * What the gateway needs from the rest of Kiln: the model directory (metadata, readiness), its one port to the
 * pools in two faces (the pool directory for inference: where pools are, their load, how to send them requests; the
 * pool admin for the control plane's repository extension and dashboard, which mount on the gateway: the pools as
 * they report themselves, a multiplexed pool's models) and a data locator (which node holds a data key). Implementations must never block; each interface
 * states its contract.
 */
package io.kiln.gateway.spi;
