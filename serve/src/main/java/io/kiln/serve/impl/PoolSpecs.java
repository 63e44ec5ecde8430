package io.kiln.serve.impl;

import io.kiln.pools.ModelSpec;
import io.kiln.pools.PoolConfig;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.ModelConfig;

/** Turns a deployment's declarative spec into what a node's pool manager is created with. */
public final class PoolSpecs {

  private PoolSpecs() {
  }

  public static ModelSpec model(ModelConfig m) {
    ModelSpec.Builder b = ModelSpec.builder()
        .uri(m.uri())
        .engine(m.engine().spelling())
        .inputs(m.inputs())
        .outputs(m.outputs())
        .warmupBatchSizes(m.warmup().batchSizes());
    m.format().ifPresent(f -> b.format(f.spelling()));
    m.architecture().ifPresent(b::architecture);
    m.threads().ifPresent(t -> b.intraOpThreads(t.intraOp()).interOpThreads(t.interOp()));
    return b.build();
  }

  public static PoolConfig config(DeploymentSpec spec) {
    return PoolConfig.builder()
        .maxBatchSize(spec.batching().maxBatchSize())
        .maxBatchDelay(spec.batching().maxBatchDelay())
        .maxQueued(spec.queue().maxQueued())
        .defaultTimeout(spec.queue().timeout())
        .build();
  }

  public static io.kiln.pools.PoolSpec pool(DeploymentSpec spec, String nodeId, int workers) {
    return new io.kiln.pools.PoolSpec(spec.name(), spec.version(), nodeId, model(spec.model()), config(spec), workers,
        spec.pool().workerResources(), spec.pool().maxRestarts());
  }
}
