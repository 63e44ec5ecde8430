package io.kiln.engines.onnxruntime.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelRunner;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.Tensor;
import io.kiln.pools.spi.ByteElements;
import io.kiln.pools.testsupport.ProjectModels;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** models/text-onnx (StringConcat with "!" and Identity on a string tensor) in ONNX Runtime: BYTES in and out. */
class OnnxStringModelTest {

  private static ModelRunner runner;

  static ModelSpec.Builder spec() {
    return ModelSpec.builder().uri(ProjectModels.modelsDir().resolve("text-onnx")).engine(ModelSpec.ENGINE_ONNX)
        .input("text", DataType.BYTES, -1).output("exclaimed", DataType.BYTES, -1).output("same", DataType.BYTES, -1)
        .intraOpThreads(1).interOpThreads(1);
  }

  @BeforeAll
  static void load() {
    runner = ModelRunners.load(spec().warmupBatchSizes(1, 4).build(), List.of());
  }

  @AfterAll
  static void close() {
    runner.close();
  }

  static Tensor text(String... s) {
    return new Tensor("text", DataType.BYTES, new long[] {s.length}, ByteElements.joinStrings(s));
  }

  @Test
  void stringsCrossTheModelBothWays() {
    List<Tensor> out = runner.infer(List.of(InferenceRequest.of(text("hello", "Wörld", "a b")))).get(0);
    assertThat(out).extracting(Tensor::name).containsExactly("exclaimed", "same");
    assertThat(out).allSatisfy(t -> {
      assertThat(t.datatype()).isEqualTo(DataType.BYTES);
      assertThat(t.shape()).containsExactly(3);
    });
    assertThat(ByteElements.strings(out.get(0))).containsExactly("hello!", "Wörld!", "a b!");
    assertThat(ByteElements.strings(out.get(1))).containsExactly("hello", "Wörld", "a b");
  }

  @Test
  void aBatchOfUnevenStringsGivesEachRequestItsOwnRows() {
    List<InferenceRequest> batch = new ArrayList<>();
    for (int r = 0; r < 5; r++) {
      String[] rows = new String[1 + r % 2];
      for (int i = 0; i < rows.length; i++) {
        rows[i] = "q" + r + "z".repeat(r * 13 + i * 5);
      }
      batch.add(new InferenceRequest("r" + r, List.of(text(rows)), List.of(), Map.of()));
    }
    List<List<Tensor>> out = runner.infer(batch);
    for (int r = 0; r < batch.size(); r++) {
      String[] sent = ByteElements.strings(batch.get(r).inputs().get(0));
      assertThat(ByteElements.strings(out.get(r).get(1))).as("request %d", r).containsExactly(sent);
      assertThat(ByteElements.strings(out.get(r).get(0))).containsExactly(
          java.util.Arrays.stream(sent).map(s -> s + "!").toArray(String[]::new));
    }
  }

  @Test
  void aSpecThatDeclaresTheStringInputAsFp32IsRefusedAtLoad() {
    ModelSpec wrong = ModelSpec.builder().uri(ProjectModels.modelsDir().resolve("text-onnx")).engine(ModelSpec.ENGINE_ONNX)
        .input("text", DataType.FP32, -1).output("exclaimed", DataType.BYTES, -1).output("same", DataType.BYTES, -1).build();
    assertThatThrownBy(() -> ModelRunners.load(wrong, List.of())).isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("input 'text' is declared FP32 but the model's is");
  }
}
