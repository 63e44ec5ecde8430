package io.kiln.engines.python.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.testsupport.ProjectModels;
import io.kiln.pools.testsupport.PythonTests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The Python engine's normal path with real processes: the example MLP, batching, datatypes, settings. */
@Tag("slow")
class PythonModelRunnerTest {

  private static ModelRunner mlp;

  @BeforeAll
  static void load() {
    mlp = ModelRunners.load(PythonTests.mlp().warmupBatchSizes(1, 8).build(), List.of());
  }

  @AfterAll
  static void close() {
    mlp.close();
  }

  static void assertClose(Tensor actual, Tensor expected, double tolerance) {
    assertThat(actual.shape()).containsExactly(expected.shape());
    float[] a = actual.asFloats();
    float[] e = expected.asFloats();
    for (int i = 0; i < e.length; i++) {
      assertThat((double) a[i]).as("element %d", i).isCloseTo(e[i], within(tolerance));
    }
  }

  @Test
  void theExampleLoadsWarmsAndReproducesTorchsOutput() {
    assertThat(mlp.loadInfo()).satisfies(info -> {
      assertThat(info.engine()).isEqualTo(ModelSpec.ENGINE_PYTHON);
      assertThat(info.format()).isEqualTo("python");
      assertThat(info.device()).isEqualTo("cpu()");
      assertThat(info.engineVersion()).startsWith("Python 3.").contains("numpy");
      assertThat(info.warmupBatchSizes()).containsExactly(1, 8);
      assertThat(info.warmupIterations()).as("a Python model warms itself: each size once").isEqualTo(2);
      assertThat(info.parameterCount()).isEmpty();
    });
    List<List<Tensor>> out = mlp.infer(List.of(InferenceRequest.of(ProjectModels.expectedInput("mlp"))));
    assertThat(out).singleElement().satisfies(tensors -> assertThat(tensors).singleElement().satisfies(t -> {
      assertThat(t.name()).isEqualTo("output");
      assertThat(t.datatype()).isEqualTo(DataType.FP32);
      assertClose(t, ProjectModels.expectedOutput("mlp"), 1e-5);
    }));
  }

  @Test
  void itReportsItsProcesssResidentMemoryForAMemoryCap() {
    // The interpreter and numpy alone are several MiB; a process's whole address space would be far more than 4 GiB.
    assertThat(mlp.memoryBytes()).isPresent();
    assertThat(mlp.memoryBytes().getAsLong()).isBetween(4L << 20, 4L << 30);
  }

  @Test
  void aBatchGivesEachRequestWhatItWouldGetAlone() {
    int[] rows = {1, 3, 2, 1, 4, 1, 1, 2};
    List<InferenceRequest> batch = new ArrayList<>();
    for (int i = 0; i < rows.length; i++) {
      batch.add(ProjectModels.mlpRequest(rows[i], i));
    }
    List<List<Tensor>> together = mlp.infer(batch);
    assertThat(together).hasSize(rows.length);
    for (int i = 0; i < rows.length; i++) {
      Tensor alone = mlp.infer(List.of(batch.get(i))).get(0).get(0);
      assertThat(together.get(i).get(0).shape()).containsExactly(rows[i], 10);
      assertClose(together.get(i).get(0), alone, 1e-6);
    }
  }

  @Test
  void everyFixedSizeDatatypeCrossesByteForByte() {
    List<DataType> types = PythonFrames.SUPPORTED.stream().filter(t -> t != DataType.BYTES).toList();
    ModelSpec.Builder b = ModelSpec.builder().uri(PythonTests.testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .python(PythonTests.options().className("Echo").build());
    for (DataType t : types) {
      b.input(t.name().toLowerCase(), t, -1, 3);
      b.output(t.name().toLowerCase() + "_out", t, -1, 3);
    }
    Random random = new Random(7);
    List<Tensor> inputs = new ArrayList<>();
    for (DataType t : types) {
      byte[] data = new byte[2 * 3 * t.byteSize()];
      random.nextBytes(data);
      if (t == DataType.BOOL) {
        for (int i = 0; i < data.length; i++) {
          data[i] &= 1;
        }
      }
      inputs.add(new Tensor(t.name().toLowerCase(), t, new long[] {2, 3}, data));
    }
    try (ModelRunner echo = ModelRunners.load(b.build(), List.of())) {
      List<Tensor> out = echo.infer(List.of(new InferenceRequest("all", inputs, List.of(), Map.of()))).get(0);
      assertThat(out).hasSize(types.size());
      for (int i = 0; i < types.size(); i++) {
        assertThat(out.get(i)).isEqualTo(inputs.get(i).withName(inputs.get(i).name() + "_out"));
      }
    }
  }

  @Test
  void configDeviceAndEnvironmentReachTheModel() {
    ModelSpec spec = PythonTests.faulty(Map.of("scale", 3, "expect", Map.of("device", "cpu",
            "CUDA_VISIBLE_DEVICES", "", "OMP_NUM_THREADS", "2", "MKL_NUM_THREADS", "2", "KILN_TEST", "yes")))
        .intraOpThreads(2).build();
    spec = spec.toBuilder().python(spec.python().toBuilder().env(Map.of("KILN_TEST", "yes")).build()).build();
    try (ModelRunner r = ModelRunners.load(spec, List.of())) {
      Tensor y = r.infer(List.of(InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {1, 2, 3, 4}))))
          .get(0).get(0);
      assertThat(y.name()).isEqualTo("y");
      assertThat(y.asFloats()).containsExactly(3, 6, 9, 12);
    }
  }

  @Test
  void aWorkerWithGpusShowsThemAsCudaVisibleDevicesAndLoadsOnCudaZero() {
    ModelSpec spec = PythonTests.faulty(Map.of("expect", Map.of("device", "cuda:0", "CUDA_VISIBLE_DEVICES", "2,3")))
        .build();
    try (ModelRunner r = ModelRunners.load(spec, List.of(2, 3))) {
      assertThat(r.loadInfo().device()).isEqualTo("gpu(2)");
    }
  }

  @Test
  void outputsAreCastWithinTheirKindAndAMissingOutputFailsTheBatch() {
    ModelSpec spec = ModelSpec.builder().uri(PythonTests.testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 4)
        .python(PythonTests.options().className("Sloppy").build()).build();
    try (ModelRunner r = ModelRunners.load(spec, List.of())) {
      assertThat(r.infer(List.of(InferenceRequest.of(Tensor.ofFloats("x", new long[] {1, 4}, new float[] {1, 2, 3, 4}))))
          .get(0).get(0).asFloats()).containsExactly(2, 4, 6, 8);
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> r.infer(List.of(InferenceRequest.of(
              Tensor.ofFloats("x", new long[] {1, 4}, new float[] {-1, 2, 3, 4})))))
          .isInstanceOf(io.kiln.pools.InferenceException.class).hasMessageContaining("no output 'y'");
    }
  }

  @Test
  void closingStopsTheProcess() {
    PythonModelRunner r = (PythonModelRunner) ModelRunners.load(PythonTests.faulty(Map.of()).build(), List.of());
    ProcessHandle p = ProcessHandle.of(r.pid()).orElseThrow();
    assertThat(p.isAlive()).isTrue();
    r.close();
    await().atMost(Duration.ofSeconds(10)).until(() -> !p.isAlive());
  }
}
