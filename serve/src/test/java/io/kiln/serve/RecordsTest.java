package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.BatchingSpec;
import io.kiln.pools.DataType;
import io.kiln.pools.HealthSpec;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.QueueSpec;
import io.kiln.pools.TensorSpec;
import io.kiln.runtime.Resources;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Specs built in code obey the same rules as loaded ones, with messages naming the field. */
class RecordsTest {

  private static final List<TensorSpec> T = List.of(new TensorSpec("x", DataType.FP32, new long[] {-1}));

  private static ModelSpec model() {
    return ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN).inputs(T).outputs(T).build();
  }

  private static ModelSpec.Builder pytorch() {
    return ModelSpec.builder().uri("/m").inputs(T).outputs(T);
  }

  private static PoolPlacement pool() {
    return new PoolPlacement(new PoolPlacement.PerNode(1), Resources.cpu(1), Map.of(), 3);
  }

  @Test
  void deploymentRules() {
    assertThatThrownBy(() -> new DeploymentSpec("Bad", "1", model(), pool(), BatchingSpec.DEFAULT, QueueSpec.DEFAULT,
        Optional.empty(), HealthSpec.DEFAULT)).hasMessageStartingWith("name 'Bad' is not a valid name");
    assertThatThrownBy(() -> new DeploymentSpec("ok", "1", model(), pool(), new BatchingSpec(64, Duration.ZERO),
        new QueueSpec(8, Duration.ofSeconds(1)), Optional.empty(), HealthSpec.DEFAULT))
        .hasMessage("batching.max_batch_size max_batch_size 64 exceeds queue.max_queued 8: a batch could never fill");
    assertThatThrownBy(() -> new DeploymentSpec("ok", "1", model(), new PoolPlacement(new PoolPlacement.PerNode(2), Resources.cpu(1),
        Map.of(), 3), BatchingSpec.DEFAULT, QueueSpec.DEFAULT,
        Optional.of(new AutoscalingSpec(3, 4, 2, Duration.ZERO, Duration.ZERO)), HealthSpec.DEFAULT))
        .hasMessage("autoscaling.min_workers min_workers 3 exceeds pool.workers_per_node 2");
  }

  @Test
  void sectionRules() {
    assertThatThrownBy(() -> new PoolPlacement.PerNode(0)).hasMessage("workers_per_node must be at least 1, got 0");
    assertThatThrownBy(() -> new PoolPlacement(new PoolPlacement.PerGpu(1), Resources.cpu(1), Map.of(), 3))
        .hasMessageStartingWith("worker_resources per_gpu needs worker_resources to ask for a GPU share");
    assertThatThrownBy(() -> new QueueSpec(1, Duration.ZERO)).hasMessage("timeout_ms must be greater than 0, got 0");
    assertThatThrownBy(() -> new BatchingSpec(1, Duration.ofMillis(-1)))
        .hasMessage("max_batch_delay_ms must not be negative, got -1");
    assertThatThrownBy(() -> new AutoscalingSpec(2, 1, 2, Duration.ZERO, Duration.ZERO))
        .hasMessage("min_workers min_workers 2 exceeds max_workers 1");
    assertThatThrownBy(() -> new HealthSpec(Duration.ofSeconds(1), Duration.ofSeconds(2)))
        .hasMessageStartingWith("timeout_ms timeout_ms 2000 exceeds period_ms 1000");
    assertThatThrownBy(() -> pytorch().warmupBatchSizes(0).build())
        .hasMessage("warmupBatchSizes: each must be in 1..4096, got 0");
    assertThatThrownBy(() -> pytorch().interOpThreads(-1)).hasMessageStartingWith("interOpThreads: must be in 0..1024");
  }

  @Test
  void theDeploymentWarmsUpWithinItsBatchLimit() {
    assertThatThrownBy(() -> new DeploymentSpec("ok", "1", pytorch().warmupBatchSizes(1, 4).build(), pool(),
        new BatchingSpec(2, Duration.ZERO), QueueSpec.DEFAULT, Optional.empty(), HealthSpec.DEFAULT))
        .hasMessage("model.warmup.batch_sizes[1] warmup batch size 4 exceeds batching.max_batch_size 2: such a batch "
            + "never runs");
  }

  @Test
  void modelRules() {
    assertThatThrownBy(() -> pytorch().engine(ModelSpec.ENGINE_BUILTIN).build())
        .hasMessageStartingWith("uri engine Builtin needs a uri");
    assertThatThrownBy(() -> ModelSpec.builder().uri("builtin:identity").inputs(T).build())
        .hasMessageStartingWith("uri 'builtin:identity' names a builtin model; set engine: Builtin");
    assertThatThrownBy(() -> pytorch().format(ModelSpec.FORMAT_DJL_PARAMS).build())
        .hasMessageStartingWith("architecture: required for djl-params");
    assertThatThrownBy(() -> pytorch().inputs(List.of()).build()).hasMessage("inputs: a model needs at least one input");
    assertThatThrownBy(() -> pytorch().inputs(List.of(T.get(0), T.get(0))).build())
        .hasMessage("inputs: duplicate tensor name 'x'");
    org.assertj.core.api.Assertions.assertThat(pytorch().inputs(List.of(new TensorSpec("x", DataType.FP32,
        new long[0]))).build().inputs().get(0).scalar()).as("a scalar, shape []").isTrue();
    assertThatThrownBy(() -> pytorch().inputs(List.of(new TensorSpec("x", DataType.FP32, new long[33]))).build())
        .hasMessage("inputs: 'x' has 33 dimensions; at most 32 are supported");
  }
}
