package io.kiln.pipelines.impl;

import io.kiln.pipelines.CacheIndex;
import io.kiln.pipelines.Pipelines;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.KilnRuntime;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * What a job's coordinator uses on its node.
 *
 * @param board the pools' reported load: which nodes serve the deployment, and their online load
 * @param finished told the job id when a job ended on this node
 * @param sync forces the jobs' result groups to disk
 */
public record JobEnv(KilnRuntime runtime, JobStore store, PoolLoadBoard board, CacheIndex index, Pipelines pipelines,
                     LongSupplier clockMillis, long statusPeriodMs, Consumer<String> finished, FileSync sync) {
}
