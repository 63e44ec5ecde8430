package io.kiln.engines.pytorch.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding the model file in a folder and telling its format, without loading anything. */
class ModelFilesTest {

  @TempDir
  Path dir;

  private ModelSpec.Builder spec() {
    return ModelSpec.builder().uri(dir).input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 2);
  }

  private void touch(String name) throws IOException {
    Files.write(dir.resolve(name), new byte[0]);
  }

  @Test
  void detectsTorchScript() throws IOException {
    touch("net.pt");
    touch("README.md");

    assertThat(ModelFiles.resolve(spec().build()))
        .isEqualTo(new ModelFiles(dir.toAbsolutePath(), "net", ModelSpec.FORMAT_TORCHSCRIPT));
  }

  @Test
  void detectsDjlParamsAcrossEpochs() throws IOException {
    touch("net-0001.params");
    touch("net-0002.params");

    assertThat(ModelFiles.resolve(spec().architecture("mlp").build()))
        .isEqualTo(new ModelFiles(dir.toAbsolutePath(), "net", ModelSpec.FORMAT_DJL_PARAMS));
  }

  @Test
  void bothFormatsNeedAnExplicitFormat() throws IOException {
    touch("a.pt");
    touch("b-0000.params");

    assertThatThrownBy(() -> ModelFiles.resolve(spec().build()))
        .isInstanceOf(ModelLoadException.class).hasMessageContaining("both TorchScript [a] and DJL parameter files [b]");
    assertThat(ModelFiles.resolve(spec().format("torchscript").build()).prefix()).isEqualTo("a");
    assertThat(ModelFiles.resolve(spec().format("djl-params").architecture("mlp").build()).prefix()).isEqualTo("b");
  }

  @Test
  void severalModelsOfOneFormatAreAmbiguous() throws IOException {
    touch("a.pt");
    touch("b.pt");

    assertThatThrownBy(() -> ModelFiles.resolve(spec().build())).hasMessageContaining("several models [a, b]");
  }

  @Test
  void emptyFolderSaysWhatItLookedFor() {
    assertThatThrownBy(() -> ModelFiles.resolve(spec().build()))
        .hasMessageContaining("no TorchScript file (NAME.pt) and no DJL parameter file (NAME-NNNN.params)");
  }

  @Test
  void uriMayNameTheFile() throws IOException {
    touch("net.pt");

    assertThat(ModelFiles.resolve(spec().uri(dir.resolve("net.pt")).build()).prefix()).isEqualTo("net");
    touch("weights.bin");
    assertThatThrownBy(() -> ModelFiles.resolve(spec().uri(dir.resolve("weights.bin")).build()))
        .hasMessageContaining("neither NAME.pt");
  }

  @Test
  void declaredFormatMustMatchTheFile() throws IOException {
    touch("net.pt");

    assertThatThrownBy(() -> ModelFiles.resolve(spec().uri(dir.resolve("net.pt")).format("djl-params").architecture("mlp").build()))
        .hasMessageContaining("is torchscript but the spec says djl-params");
  }
}
