package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadInfo;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * Model warm-up repeats each batch size so the JIT compiles the runner's path, within a bounded budget
 * judged on an injected clock.
 */
class RunnerLoaderWarmupTest {

  private static ModelSpec identity(Integer... batchSizes) {
    return ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
        .input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 64)
        .warmupBatchSizes(batchSizes).build();
  }

  /** A clock that moves {@code stepMillis} forward every time it is read. */
  private static LongSupplier ticking(long stepMillis) {
    AtomicLong now = new AtomicLong();
    return () -> now.addAndGet(stepMillis * 1_000_000L);
  }

  @Test
  void aFastModelRunsEveryBatchSizeTheMaximumNumberOfTimes() {
    try (ModelRunner runner = ModelRunners.load(identity(1, 4), List.of())) {
      ModelLoadInfo info = runner.loadInfo();
      assertThat(info.warmupBatchSizes()).containsExactly(1, 4);
      assertThat(info.warmupIterations()).isEqualTo(2 * ModelRunners.WARMUP_MAX_ITERATIONS);
      assertThat(info.warmupTime()).isPositive().isLessThan(ModelRunners.WARMUP_BUDGET.multipliedBy(2));
    }
  }

  @Test
  void theBudgetIsSharedBetweenTheBatchSizes() {
    ModelSpec spec = identity(1, 8);
    try (Counting runner = new Counting(spec)) {
      // 300 ms per clock reading: size 1 has until 500 ms (2 runs), size 8 until 1 s (2 more).
      int ran = RunnerLoader.warmUp(runner, spec, ModelRunners.WARMUP_MAX_ITERATIONS, 0, ticking(300));

      assertThat(ran).isEqualTo(4);
      assertThat(runner.rowsPerBatch).containsExactly(1L, 1L, 8L, 8L);
    }
  }

  @Test
  void aSlowModelStillRunsEachBatchSizeOnce() {
    ModelSpec spec = identity(1, 8, 2);
    try (Counting runner = new Counting(spec)) {
      int ran = RunnerLoader.warmUp(runner, spec, ModelRunners.WARMUP_MAX_ITERATIONS, 0, ticking(5_000));

      assertThat(ran).isEqualTo(3);
      assertThat(runner.rowsPerBatch).containsExactly(1L, 8L, 2L);
    }
  }

  @Test
  void repeatsAreCappedWhateverTheTimeLeft() {
    ModelSpec spec = identity(2);
    try (Counting runner = new Counting(spec)) {
      int ran = RunnerLoader.warmUp(runner, spec, 5, 0, () -> 0L);

      assertThat(ran).isEqualTo(5);
    }
  }

  /** The identity, counting the rows of every batch it runs. */
  private static final class Counting extends BuiltinModels.IdentityRunner {
    final List<Long> rowsPerBatch = new ArrayList<>();

    Counting(ModelSpec spec) {
      super(spec, spec.outputs());
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      rowsPerBatch.add(inputs.get(0).shape()[0]);
      return super.forward(inputs);
    }
  }

  @Test
  void warmUpRequestsAreZerosOfTheSmallestShape() {
    List<InferenceRequest> batch = RunnerLoader.zeros(identity(1).inputs(), 3);
    assertThat(batch).hasSize(3);
    assertThat(batch.get(0).inputs().get(0).shape()).containsExactly(1, 64);
  }
}
