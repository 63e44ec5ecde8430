package io.kiln.pipelines.impl;

import io.kiln.pools.PoolClient;
import io.kiln.pipelines.NodeCache;
import java.util.function.LongSupplier;

/**
 * What steps need on the node they run on, registered as that node's local service by
 * {@link io.kiln.pipelines.Pipelines}: the step task finds it through its
 * {@link io.kiln.runtime.TaskContext}.
 *
 * @param maxOutputElements infer outputs with more elements are reported without their data
 */
public record NodeServices(String nodeId, NodeCache cache, PoolClient pools, Webhooks webhooks, EventSink events,
                           StepGauges gauges, LongSupplier clockMillis, ClassLoader classLoader,
                           long maxOutputElements) {
}
