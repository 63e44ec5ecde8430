package io.kiln.engines.python.impl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.PythonTests;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An answer with a zero-length dimension comes back empty from a Python worker instead of killing its process. */
class PythonEmptyOutputTest {

  @Test
  void anOutputWithAZeroLengthDimensionComesBackEmpty() {
    try (ModelRunner runner = ModelRunners.load(ModelSpec.builder().uri(PythonTests.testModel("empty"))
        .engine(ModelSpec.ENGINE_PYTHON).python(PythonTests.options().build())
        .input("x", DataType.FP32, -1, 2).output("boxes", DataType.FP32, -1, -1, 8).intraOpThreads(1).build(),
        List.of())) {
      List<Tensor> out = runner.infer(List.of(InferenceRequest.of(Tensor.ofFloats("x", new long[] {3, 2},
          new float[6])))).get(0);
      assertThat(out.get(0).shape()).containsExactly(3, 0, 8);
      assertThat(out.get(0).data()).isEmpty();
      assertThat(runner.processId()).as("the worker process lives on").isPresent();
      assertThat(runner.infer(List.of(InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 2},
          new float[2])))).get(0).get(0).shape()).containsExactly(1, 0, 8);
    }
  }
}
