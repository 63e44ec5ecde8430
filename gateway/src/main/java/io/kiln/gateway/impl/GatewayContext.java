package io.kiln.gateway.impl;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.spi.DataLocator;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.function.BooleanSupplier;

/**
 * The parts the HTTP and gRPC front ends share; all thread-safe. {@code started} is true once both servers
 * listen, until close, while no readiness hold is in place ({@code holds} says why not). {@code spans}: where the
 * gateway's request spans go ({@link io.kiln.pools.trace.Spans#OFF} unless the node exports spans).
 * {@code sharedMemory}: the system shared-memory regions clients registered.
 */
record GatewayContext(GatewayOptions options, ModelLookup models, DataLocator locator, Dispatcher dispatcher,
                      HttpInferDecoder httpDecoder, JsonResponseEncoder encoder, ErrorMapper errors,
                      GatewayMetrics metrics, PrometheusMeterRegistry registry, BooleanSupplier started,
                      ReadinessHolds holds, io.kiln.pools.trace.Spans spans, SharedMemoryRegions sharedMemory) {
}
