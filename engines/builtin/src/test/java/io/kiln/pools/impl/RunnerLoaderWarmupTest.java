package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.engines.builtin.impl.BuiltinModels;
import io.kiln.engines.builtin.impl.DiagnosticModels;
import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelExecutionException;
import io.kiln.pools.ModelLoadException;
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
 * Model warm-up repeats each batch size (with each warm-up sample) so the JIT compiles the runner's path, within a
 * bounded budget judged on an injected clock; a batch the model rejects is a problem recorded, not a failed load.
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
    final List<Float> firstValues = new ArrayList<>();

    Counting(ModelSpec spec) {
      super(spec, spec.outputs());
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      rowsPerBatch.add(inputs.get(0).shape()[0]);
      firstValues.add(inputs.get(0).asFloats()[0]);
      return super.forward(inputs);
    }
  }

  @Test
  void eachSampleRunsAtEachBatchSizeWithinItsShareOfTheBudget() {
    ModelSpec spec = identity(1, 2);
    List<WarmupSamples.Sample> samples = List.of(sample("warmup/a.json", 1), sample("warmup/b.json", 2));
    try (Counting runner = new Counting(spec)) {
      // 4 batches of 250 ms each; every clock reading moves 150 ms.
      RunnerLoader.Warmup warm = RunnerLoader.warmUp(runner, spec, samples, ModelRunners.WARMUP_MAX_ITERATIONS, 0,
          ticking(150));

      assertThat(warm.iterations()).isEqualTo(7);
      assertThat(runner.firstValues).containsExactly(1f, 1f, 2f, 2f, 1f, 2f, 2f);
      assertThat(runner.rowsPerBatch).containsExactly(1L, 1L, 1L, 1L, 2L, 2L, 2L);
      assertThat(warm.samples()).containsExactly("warmup/a.json", "warmup/b.json");
      assertThat(warm.problems()).isEmpty();
    }
  }

  @Test
  void aBatchTheModelRejectsIsRecordedOnceAndTheModelServes() {
    ModelSpec spec = identity(1, 8, 2);
    try (Picky runner = new Picky(spec)) {
      RunnerLoader.Warmup warm = RunnerLoader.warmUp(runner, spec, List.of(), 3, 0, () -> 0L);

      assertThat(warm.iterations()).as("size 1 three times; 8 rejected; zeros not tried again at 2").isEqualTo(3);
      assertThat(warm.samples()).isEmpty();
      assertThat(warm.problems()).containsExactly("warm-up batch of 8 requests of synthetic zeros (input FP32[1, 64])"
          + " was rejected: picky: 8 rows");
      assertThat(runner.infer(List.of(sample("x", 5).request()))).hasSize(1);
    }
  }

  @Test
  void aRejectedSampleIsDroppedAndTheOthersStillRun() {
    ModelSpec spec = identity(1, 2);
    List<WarmupSamples.Sample> samples = List.of(sample("warmup/a.json", 1), sample("warmup/nan.json", Float.NaN));
    // The diagnostic model that crashes on NaN throws ModelExecutionException, as an engine error would.
    try (ModelRunner runner = DiagnosticModels.create(spec.toBuilder().uri(DiagnosticModels.CRASH_ON_NAN).build(),
        spec.outputs())) {
      RunnerLoader.Warmup warm = RunnerLoader.warmUp(runner, spec, samples, 2, 0, () -> 0L);

      assertThat(warm.iterations()).isEqualTo(4);
      assertThat(warm.problems()).singleElement().asString().startsWith("warm-up batch of 1 request of warmup/nan.json"
          + " (input FP32[1, 64]) was rejected: simulated worker crash");
    }
  }

  @Test
  void aBatchThatLeavesTheRunnerUnusableFailsTheLoadAsBefore() {
    ModelSpec spec = identity(1);
    Picky runner = new Picky(spec);
    runner.breaksForGood = true;

    assertThatThrownBy(() -> RunnerLoader.warmUp(runner, spec.toBuilder().warmupBatchSizes(8).build(), List.of(), 3, 0,
        () -> 0L)).isInstanceOf(ModelLoadException.class).hasMessage("model builtin:identity failed its warm-up on"
        + " warm-up batch of 8 requests of synthetic zeros (input FP32[1, 64]) and cannot go on: picky: 8 rows");
  }

  @Test
  void outputsThatContradictTheSpecStillFailTheLoad() {
    ModelSpec spec = identity(1);
    // Returns rank 3 where the spec declares [-1, 64], whatever the input: the spec does not fit, every request fails.
    try (ModelRunner runner = new BuiltinModels.IdentityRunner(spec, spec.outputs()) {
      @Override
      protected List<Tensor> forward(List<Tensor> inputs) {
        Tensor in = inputs.get(0);
        return List.of(new Tensor(in.name(), in.datatype(), new long[] {in.shape()[0], 64, 1}, in.data()));
      }
    }) {
      assertThatThrownBy(() -> RunnerLoader.warmUp(runner, spec, List.of(), 3, 0, () -> 0L))
          .isInstanceOf(ModelLoadException.class)
          .hasMessage("model builtin:identity failed its warm-up on warm-up batch of 1 request of synthetic zeros"
              + " (input FP32[1, 64]): its spec does not fit the model: model output 0 is FP32[1, 64, 1] for 1 input"
              + " rows, but the spec declares " + spec.outputs().get(0));
    }
  }

  /** A one-row request of 64 copies of {@code value}. */
  private static WarmupSamples.Sample sample(String name, float value) {
    float[] row = new float[64];
    java.util.Arrays.fill(row, value);
    return new WarmupSamples.Sample(name, InferenceRequest.of(Tensor.ofFloats("input", new long[] {1, 64}, row)));
  }

  /** The identity, refusing batches of 8 rows as an engine that cannot take them would. */
  private static final class Picky extends BuiltinModels.IdentityRunner {
    boolean breaksForGood;

    Picky(ModelSpec spec) {
      super(spec, spec.outputs());
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      if (inputs.get(0).shape()[0] == 8) {
        if (breaksForGood) {
          close();
        }
        throw new ModelExecutionException("picky: 8 rows");
      }
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
