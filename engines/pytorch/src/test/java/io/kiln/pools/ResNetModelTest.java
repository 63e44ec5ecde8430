package io.kiln.pools;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.engines.pytorch.tools.BuildModels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ResNet-18 the benchmarks use, built by project code; small images keep it quick on a loaded CPU. */
@Tag("slow")
class ResNetModelTest {

  private static final int IMAGE = 64;

  @Test
  void builtResNetLoadsAndClassifies(@TempDir Path dir) throws Exception {
    assertThat(BuildModels.buildResNet18(dir, IMAGE, 1000, false)).isTrue();
    assertThat(BuildModels.buildResNet18(dir, IMAGE, 1000, false)).as("kept when present").isFalse();
    assertThat(Files.size(dir.resolve("resnet18-0000.params"))).isGreaterThan(40_000_000L);

    try (ModelRunner runner = ModelRunners.load(BuildModels.resnet18Spec(dir, IMAGE, 1000), List.of())) {
      float[] pixels = new float[2 * 3 * IMAGE * IMAGE];
      for (int i = 0; i < pixels.length; i++) {
        pixels[i] = (i % 251) / 251f;
      }
      InferenceRequest two = InferenceRequest.of(Tensor.ofFloats("image", new long[] {2, 3, IMAGE, IMAGE}, pixels));
      InferenceRequest one = InferenceRequest.of(Tensor.ofFloats("image", new long[] {1, 3, IMAGE, IMAGE},
          java.util.Arrays.copyOf(pixels, 3 * IMAGE * IMAGE)));

      List<List<Tensor>> out = runner.infer(List.of(one, two));

      assertThat(out.get(0).get(0).name()).isEqualTo("logits");
      assertThat(out.get(0).get(0).shape()).containsExactly(1, 1000);
      assertThat(out.get(1).get(0).shape()).containsExactly(2, 1000);
      for (float v : out.get(1).get(0).asFloats()) {
        assertThat(v).isFinite();
      }
      // torchvision's resnet18 has 11,689,512 trainable parameters; DJL also counts batch norm's running
      // mean and variance (2 x 4,800 channels).
      assertThat(runner.loadInfo().parameterCount()).hasValue(11_689_512L + 9_600L);
    }
  }
}
