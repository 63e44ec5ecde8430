package io.kiln.pools.impl;

import static io.kiln.pools.impl.ScalarBatchingTest.int64;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.spi.AbstractModelRunner;
import io.kiln.pools.spi.SpecMismatchException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Issue #36: how a runner calls a model with inputs it does not stack. A scalar goes in once per call (shape []),
 * requests that agree on it share one call, requests that differ run on their own, and a model whose outputs are not
 * all per row (a scalar output, a fixed first dimension) runs each request on its own, so no request gets a value
 * its batch-mates changed.
 */
class ScalarRunnerTest {

  /** A runner that records its calls and answers with {@code model}. */
  private static final class Recording extends AbstractModelRunner {
    final List<List<Tensor>> calls = new ArrayList<>();
    private final Function<List<Tensor>, List<Tensor>> model;

    Recording(ModelSpec spec, Function<List<Tensor>, List<Tensor>> model) {
      super(spec, spec.outputs());
      this.model = model;
    }

    @Override
    protected List<Tensor> forward(List<Tensor> inputs) {
      calls.add(inputs);
      return model.apply(inputs);
    }

    @Override
    protected void release() {
    }
  }

  private static ModelSpec.Builder spec() {
    return ModelSpec.builder().uri(Path.of("scaled")).input("x", DataType.FP32, -1, 2).input("sr", DataType.INT64)
        .output("y", DataType.FP32, -1, 2);
  }

  private static long valueOf(Tensor t) {
    return ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }

  /** y = x * sr. */
  private static List<Tensor> scaled(List<Tensor> in) {
    float[] x = in.get(0).asFloats();
    long sr = valueOf(in.get(1));
    for (int i = 0; i < x.length; i++) {
      x[i] *= sr;
    }
    return List.of(Tensor.ofFloats("y", in.get(0).shape(), x));
  }

  private static InferenceRequest request(String id, long sr, float... x) {
    return new InferenceRequest(id, List.of(Tensor.ofFloats("x", new long[] {x.length / 2, 2}, x), int64("sr", sr)),
        List.of(), Map.of());
  }

  @Test
  void requestsThatAgreeOnAScalarShareOneCallThatTakesItOnce() {
    Recording runner = new Recording(spec().build(), ScalarRunnerTest::scaled);

    List<List<Tensor>> out = runner.infer(List.of(request("a", 3, 1, 2), request("b", 3, 3, 4, 5, 6)));

    assertThat(runner.calls).singleElement().satisfies(call -> {
      assertThat(call.get(0).shape()).containsExactly(3, 2);
      assertThat(call.get(1).shape()).isEmpty();
      assertThat(valueOf(call.get(1))).isEqualTo(3);
    });
    assertThat(out.get(0)).singleElement().satisfies(y -> assertThat(y.asFloats()).containsExactly(3, 6));
    assertThat(out.get(1)).singleElement().satisfies(y -> assertThat(y.asFloats()).containsExactly(9, 12, 15, 18));
  }

  @Test
  void requestsThatDifferInAScalarRunOnTheirOwnEachWithItsValue() {
    Recording runner = new Recording(spec().build(), ScalarRunnerTest::scaled);

    List<List<Tensor>> out = runner.infer(List.of(request("a", 2, 1, 1), request("b", 10, 1, 1)));

    assertThat(runner.calls).hasSize(2);
    assertThat(out.get(0).get(0).asFloats()).containsExactly(2, 2);
    assertThat(out.get(1).get(0).asFloats()).containsExactly(10, 10);
  }

  @Test
  void aScalarOutputIsEachRequestsOwnSoItsRequestsRunAlone() {
    // 'rows' is a scalar that depends on the call: batched, a request would get its batch's count.
    ModelSpec counting = spec().output("rows", DataType.INT64).build();
    Recording runner = new Recording(counting, in -> List.of(scaled(in).get(0), int64("rows", in.get(0).shape()[0])));

    List<List<Tensor>> out = runner.infer(List.of(request("a", 1, 1, 1), request("b", 1, 1, 1, 1, 1)));

    assertThat(runner.calls).hasSize(2);
    assertThat(out).extracting(o -> valueOf(o.get(1))).containsExactly(1L, 2L);
    assertThat(out.get(1).get(1).shape()).isEmpty();
    assertThat(out.get(1).get(1).name()).isEqualTo("rows");
  }

  @Test
  void aStateWithAFixedFirstDimensionGoesWholeAndComesBackWhole() {
    ModelSpec stateful = ModelSpec.builder().uri(Path.of("vad")).input("x", DataType.FP32, -1, 2)
        .input("state", DataType.FP32, 2, -1, 1).input("sr", DataType.INT64)
        .output("p", DataType.FP32, -1, 1).output("stateN", DataType.FP32, 2, -1, 1).build();
    Recording runner = new Recording(stateful, in -> {
      float[] state = in.get(1).asFloats();
      for (int i = 0; i < state.length; i++) {
        state[i] += 1;
      }
      long rows = in.get(0).shape()[0];
      return List.of(Tensor.ofFloats("p", new long[] {rows, 1}, new float[(int) rows]),
          Tensor.ofFloats("stateN", in.get(1).shape(), state));
    });
    InferenceRequest a = new InferenceRequest("a", List.of(Tensor.ofFloats("x", new long[] {1, 2}, new float[2]),
        Tensor.ofFloats("state", new long[] {2, 1, 1}, new float[] {0, 10}), int64("sr", 8000)), List.of(), Map.of());

    List<List<Tensor>> out = runner.infer(List.of(a, a));

    assertThat(runner.calls).hasSize(2).allSatisfy(call -> assertThat(call.get(1).shape()).containsExactly(2, 1, 1));
    assertThat(out).allSatisfy(o -> {
      assertThat(o.get(1).shape()).containsExactly(2, 1, 1);
      assertThat(o.get(1).asFloats()).containsExactly(1, 11);
    });
  }

  @Test
  void aModelThatReturnsAVectorWhereTheSpecDeclaresAScalarContradictsItsSpec() {
    ModelSpec counting = spec().output("rows", DataType.INT64).build();
    Recording runner = new Recording(counting, in -> List.of(scaled(in).get(0),
        new Tensor("rows", DataType.INT64, new long[] {1}, new byte[8])));

    assertThatThrownBy(() -> runner.infer(List.of(request("a", 1, 1, 1))))
        .isInstanceOf(SpecMismatchException.class).hasMessageContaining("model output 1 is INT64[1]");
  }

  @Test
  void theIdentityEchoesAScalarAndAModelOfScalarsOnly() {
    ModelSpec identity = ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
        .input("x", DataType.FP32, -1, 2).input("sr", DataType.INT64).build();
    try (ModelRunner runner = ModelRunners.load(identity, List.of())) {
      List<List<Tensor>> out = runner.infer(List.of(request("a", 16_000, 1, 2), request("b", 8_000, 3, 4)));
      assertThat(out.get(0)).containsExactly(Tensor.ofFloats("x", new long[] {1, 2}, new float[] {1, 2}),
          int64("sr", 16_000));
      assertThat(out.get(1).get(1)).isEqualTo(int64("sr", 8_000));
    }
    ModelSpec scalars = ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
        .input("n", DataType.INT64).build();
    try (ModelRunner runner = ModelRunners.load(scalars, List.of())) {
      assertThat(runner.loadInfo().warmupProblems()).isEmpty();
      InferenceRequest three = new InferenceRequest("n", List.of(int64("n", 3)), List.of(), Map.of());
      assertThat(runner.infer(List.of(three, three))).containsExactly(List.of(int64("n", 3)), List.of(int64("n", 3)));
    }
  }
}
