package io.kiln.pipelines.impl;

import io.kiln.runtime.KilnRuntime;
import io.kiln.pipelines.DeploymentResolver;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/** What a run's coordinator works with, shared by all runs a node coordinates. */
public record RunEnv(KilnRuntime runtime, RunStore store, EventSink events, DeploymentResolver resolver,
                     Webhooks webhooks, LongSupplier clockMillis, Consumer<String> finished) {
}
