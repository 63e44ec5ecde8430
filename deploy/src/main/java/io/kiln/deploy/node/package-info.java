/**
 * The composition root of a Kiln node: {@link io.kiln.deploy.node.ServingNode} wires the pool load board and
 * client, the serve controller, pipelines and the gateway (with the management and pipelines APIs) on a
 * running runtime ({@link io.kiln.deploy.node.NodeAssembly}, which also starts and stops them in order), and
 * feeds the gateway through its SPIs implemented on Kiln itself: models from the serve
 * controller's desired state and status ({@link io.kiln.deploy.node.ServeModelDirectory}), pools from the
 * pool load board and {@code PoolClient} ({@link io.kiln.deploy.node.PoolsDirectory}). This is what a node
 * runs; the gateway's own tests use in-test implementations. Before it closes, a node drains
 * ({@link io.kiln.deploy.node.ServingNode#drain}: {@link io.kiln.deploy.node.NodeDrain} waits, on an injected
 * clock, for {@link io.kiln.deploy.node.LocalPools} and the gateway to go idle).
 */
package io.kiln.deploy.node;
