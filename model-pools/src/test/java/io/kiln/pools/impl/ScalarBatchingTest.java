package io.kiln.pools.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelSignature;
import io.kiln.pools.PoolConfig;
import io.kiln.pools.Tensor;
import io.kiln.pools.TensorSpec;
import io.kiln.pools.testing.DispatcherHarness;
import io.kiln.pools.testing.TestWorker;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue #36: inputs the pool does not stack (a scalar such as Silero VAD's {@code sr}, a state whose first dimension
 * the spec fixes) keep requests that differ in them out of one batch; equal scalars still batch.
 */
class ScalarBatchingTest {

  private static final Duration DELAY = Duration.ofMillis(10);
  private static final ModelSignature AUDIO = new ModelSignature(List.of(
      new TensorSpec("input", DataType.FP32, new long[] {-1, 4}), new TensorSpec("sr", DataType.INT64, new long[0])),
      List.of(new TensorSpec("output", DataType.FP32, new long[] {-1, 1})));
  private static final ModelSignature STATEFUL = new ModelSignature(List.of(
      new TensorSpec("input", DataType.FP32, new long[] {-1, 4}),
      new TensorSpec("state", DataType.FP32, new long[] {2, -1, 3}), new TensorSpec("sr", DataType.INT64, new long[0])),
      List.of(new TensorSpec("output", DataType.FP32, new long[] {-1, 1})));

  private DispatcherHarness h;

  @AfterEach
  void close() {
    if (h != null) {
      h.close();
    }
  }

  static Tensor int64(String name, long value) {
    return new Tensor(name, DataType.INT64, new long[0],
        ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array());
  }

  static InferenceRequest audio(String id, int rows, long sr) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("input", new long[] {rows, 4}, new float[rows * 4]),
        int64("sr", sr)), List.of(), Map.of());
  }

  static InferenceRequest stateful(String id, long sr) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("input", new long[] {1, 4}, new float[4]),
        Tensor.ofFloats("state", new long[] {2, 1, 3}, new float[6]), int64("sr", sr)), List.of(), Map.of());
  }

  @Test
  void aScalarsValueIsPartOfTheKeyAndItsRequestsRowsAreItsBatchedInputs() {
    BatchKey a = BatchKey.of(audio("a", 2, 16_000));
    assertThat(a).isEqualTo(BatchKey.of(audio("b", 5, 16_000))).hasSameHashCodeAs(BatchKey.of(audio("b", 5, 16_000)))
        .isNotEqualTo(BatchKey.of(audio("c", 2, 8_000)));
    assertThat(a.rows()).isEqualTo(2);
    assertThat(a.alone()).isFalse();
    assertThat(a).hasToString("[input:FP32[-1, 4], sr:INT64[]=0x803e000000000000]->[]");
  }

  @Test
  void requestsWithDifferentScalarsNeverShareABatchAndEqualOnesDo() {
    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(8).maxBatchDelay(DELAY).build(), AUDIO);
    TestWorker w = h.addWorker("w1");
    h.submit(audio("a", 1, 16_000));
    h.submit(audio("b", 2, 8_000));
    h.submit(audio("c", 3, 16_000));
    h.submit(audio("d", 1, 8_000));

    h.clock.advance(DELAY);
    assertThat(w.calls()).singleElement().satisfies(call -> assertThat(call.ids()).containsExactly("a", "c"));
    w.lastCall().succeed();
    assertThat(w.calls()).hasSize(2);
    assertThat(w.lastCall().ids()).containsExactly("b", "d");
    assertThat(w.lastCall().rows()).isEqualTo(3);
    w.lastCall().succeed();
  }

  @Test
  void anInputWhoseSpecFixesItsFirstDimensionMakesEachRequestABatchOfItsOwnThatGoesAtOnce() {
    assertThat(BatchKey.wholeInputs(STATEFUL)).containsExactly("state");
    BatchKey key = BatchKey.of(stateful("a", 16_000), Set.of("state"));
    assertThat(key.alone()).isTrue();
    assertThat(key.rows()).as("the state's first dimension is not the batch's").isEqualTo(1);
    assertThat(key).isEqualTo(key).isNotEqualTo(BatchKey.of(stateful("a", 16_000), Set.of("state")));

    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(8).maxBatchDelay(DELAY).build(), STATEFUL);
    TestWorker w = h.addWorker("w1");
    TestWorker w2 = h.addWorker("w2");
    h.submit(stateful("a", 16_000));
    h.submit(stateful("b", 16_000));

    assertThat(h.clock.elapsedNanos()).isZero();
    assertThat(List.of(w, w2)).allSatisfy(worker -> assertThat(worker.calls()).singleElement()
        .satisfies(call -> assertThat(call.batch()).hasSize(1)));
    assertThat(h.stats().invalid()).isZero();
  }

  @Test
  void aRequestOfScalarsOnlyIsOneRowThatBatchesWithNoOther() {
    InferenceRequest scalars = new InferenceRequest("s", List.of(int64("n", 3)), List.of(), Map.of());
    BatchKey key = BatchKey.admit(scalars);
    assertThat(key.alone()).isTrue();
    assertThat(key.rows()).isEqualTo(1);

    h = new DispatcherHarness(PoolConfig.builder().maxBatchSize(8).maxBatchDelay(DELAY).build(), null);
    TestWorker w = h.addWorker("w1");
    var answer = h.submit(scalars);
    assertThat(w.calls()).singleElement().satisfies(call -> assertThat(call.ids()).containsExactly("s"));
    w.lastCall().succeed();
    assertThat(answer).isCompletedWithValue(List.of(int64("out-n", 3)));
  }
}
