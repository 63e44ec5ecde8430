/**
 * The gateway's SPIs implemented on Kiln itself: models from the serve controller's desired state and
 * status, pools from the pool load board and {@code PoolClient}. This is what a node runs; the gateway's
 * own tests use in-test implementations.
 */
package io.kiln.gateway.serving;
