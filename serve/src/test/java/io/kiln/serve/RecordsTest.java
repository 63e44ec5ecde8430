package io.kiln.serve;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
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

  private static ModelConfig model() {
    return new ModelConfig("builtin:identity", ModelEngine.BUILTIN, Optional.empty(), Optional.empty(), T, T,
        WarmupSpec.DEFAULT, Optional.empty());
  }

  private static PoolSpec pool() {
    return new PoolSpec(new PoolSpec.PerNode(1), Resources.cpu(1), Map.of(), 3);
  }

  @Test
  void deploymentRules() {
    assertThatThrownBy(() -> new DeploymentSpec("Bad", "1", model(), pool(), BatchingSpec.DEFAULT, QueueSpec.DEFAULT,
        Optional.empty(), HealthSpec.DEFAULT)).hasMessageStartingWith("name 'Bad' is not a valid name");
    assertThatThrownBy(() -> new DeploymentSpec("ok", "1", model(), pool(), new BatchingSpec(64, Duration.ZERO),
        new QueueSpec(8, Duration.ofSeconds(1)), Optional.empty(), HealthSpec.DEFAULT))
        .hasMessage("batching.max_batch_size max_batch_size 64 exceeds queue.max_queued 8: a batch could never fill");
    assertThatThrownBy(() -> new DeploymentSpec("ok", "1", model(), new PoolSpec(new PoolSpec.PerNode(2), Resources.cpu(1),
        Map.of(), 3), BatchingSpec.DEFAULT, QueueSpec.DEFAULT,
        Optional.of(new AutoscalingSpec(3, 4, 2, Duration.ZERO, Duration.ZERO)), HealthSpec.DEFAULT))
        .hasMessage("autoscaling.min_workers min_workers 3 exceeds pool.workers_per_node 2");
  }

  @Test
  void sectionRules() {
    assertThatThrownBy(() -> new PoolSpec.PerNode(0)).hasMessage("workers_per_node must be at least 1, got 0");
    assertThatThrownBy(() -> new PoolSpec(new PoolSpec.PerGpu(1), Resources.cpu(1), Map.of(), 3))
        .hasMessageStartingWith("worker_resources per_gpu needs worker_resources to ask for a GPU share");
    assertThatThrownBy(() -> new QueueSpec(1, Duration.ZERO)).hasMessage("timeout_ms must be greater than 0, got 0");
    assertThatThrownBy(() -> new BatchingSpec(1, Duration.ofMillis(-1)))
        .hasMessage("max_batch_delay_ms must not be negative, got -1");
    assertThatThrownBy(() -> new AutoscalingSpec(2, 1, 2, Duration.ZERO, Duration.ZERO))
        .hasMessage("min_workers min_workers 2 exceeds max_workers 1");
    assertThatThrownBy(() -> new HealthSpec(Duration.ofSeconds(1), Duration.ofSeconds(2)))
        .hasMessageStartingWith("timeout_ms timeout_ms 2000 exceeds period_ms 1000");
    assertThatThrownBy(() -> new WarmupSpec(List.of(0))).hasMessage("batch_sizes[0] must be at least 1, got 0");
    assertThatThrownBy(() -> new ThreadsSpec(1, 0)).hasMessage("inter_op must be at least 1, got 0");
  }

  @Test
  void modelRules() {
    assertThatThrownBy(() -> new ModelConfig("/m", ModelEngine.BUILTIN, Optional.empty(), Optional.empty(), T, T,
        WarmupSpec.DEFAULT, Optional.empty())).hasMessageStartingWith("uri engine Builtin needs a uri");
    assertThatThrownBy(() -> new ModelConfig("/m", ModelEngine.PYTORCH, Optional.of(ModelFormat.DJL_PARAMS),
        Optional.empty(), T, T, WarmupSpec.DEFAULT, Optional.empty()))
        .hasMessageStartingWith("architecture format djl-params needs an architecture");
    assertThatThrownBy(() -> new ModelConfig("/m", ModelEngine.PYTORCH, Optional.empty(), Optional.empty(), List.of(), T,
        WarmupSpec.DEFAULT, Optional.empty())).hasMessage("inputs must declare at least one tensor");
    assertThatThrownBy(() -> new ModelConfig("/m", ModelEngine.PYTORCH, Optional.empty(), Optional.empty(),
        List.of(T.get(0), T.get(0)), T, WarmupSpec.DEFAULT, Optional.empty()))
        .hasMessage("inputs[1].name duplicate input name 'x' (also inputs[0])");
    assertThatThrownBy(() -> new ModelConfig("/m", ModelEngine.PYTORCH, Optional.empty(), Optional.empty(),
        List.of(new TensorSpec("x", DataType.FP32, new long[0])), T, WarmupSpec.DEFAULT, Optional.empty()))
        .hasMessage("inputs[0].shape must have at least one dimension");
  }
}
