package io.kiln.pools.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.SpecRules;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Kiln's own engines as the registry holds them, and the shared rules read from their capabilities. */
class EnginesTest {

  @Test
  void kilnsEnginesComeFirstInTheirFixedOrderEachFromAJarOfItsOwn() {
    assertThat(Engines.installed().names()).containsExactly("PyTorch", "OnnxRuntime", "Python", "Builtin");
    assertThat(Engines.installed().names()).isEqualTo(Engines.FIRST);
    assertThat(ModelSpec.engines()).isEqualTo(Engines.installed().names());
    assertThat(Engines.installed().all()).extracting(e -> e.getClass().getPackageName()).containsExactly(
        "io.kiln.engines.pytorch", "io.kiln.engines.onnxruntime", "io.kiln.engines.python", "io.kiln.engines.builtin");
    // engines/<name>/target/classes here, kiln-engine-<name>.jar on a node: four places, none of them model-pools'
    assertThat(Engines.installed().all()).extracting(e -> e.getClass().getProtectionDomain().getCodeSource()
        .getLocation().toString()).doesNotHaveDuplicates()
        .noneMatch(l -> l.equals(Engines.class.getProtectionDomain().getCodeSource().getLocation().toString()));
  }

  @Test
  void theSharedRulesFollowTheCapabilities() {
    assertThat(SpecRules.reportsMemory(ModelSpec.ENGINE_ONNX)).isNull();
    assertThat(SpecRules.reportsMemory(ModelSpec.ENGINE_PYTORCH)).isEqualTo("engine PyTorch does not report the memory"
        + " a model holds, so max_memory_mb cannot be enforced over it (engines that do: OnnxRuntime, Python, Builtin);"
        + " drop max_memory_mb and cap by max_models_per_worker");
    assertThat(SpecRules.formatFits(ModelSpec.ENGINE_PYTORCH, ModelSpec.FORMAT_DJL_PARAMS)).isNull();
    assertThat(SpecRules.formatFits(ModelSpec.ENGINE_ONNX, ModelSpec.FORMAT_TORCHSCRIPT))
        .isEqualTo("format applies to the PyTorch engine only");
    assertThat(SpecRules.streamingFits(ModelSpec.ENGINE_PYTHON, "models/p", true)).isNull();
    assertThat(SpecRules.streamingFits(ModelSpec.ENGINE_BUILTIN, "builtin:chunks", true)).isNull();
    assertThat(SpecRules.streamingFits(ModelSpec.ENGINE_BUILTIN, "builtin:identity", true))
        .isEqualTo("'builtin:identity' does not stream; the streaming built-ins are [builtin:chunks]");
  }

  @Test
  void aFolderShowsTheOneEngineRecognisingItsFiles(@TempDir Path dir) throws Exception {
    Path onnx = Files.createDirectories(dir.resolve("onnx"));
    Files.writeString(onnx.resolve("model.onnx"), "");
    Path torch = Files.createDirectories(dir.resolve("torch"));
    Files.writeString(torch.resolve("mlp-0000.params"), "");
    Path python = Files.createDirectories(dir.resolve("python"));
    Files.writeString(python.resolve("model.py"), "");
    Files.writeString(python.resolve("notes.txt"), "");

    assertThat(ModelFolders.engineOf(onnx)).contains("OnnxRuntime");
    assertThat(ModelFolders.engineOf(onnx.resolve("model.onnx"))).contains("OnnxRuntime");
    assertThat(ModelFolders.engineOf(torch)).contains("PyTorch");
    assertThat(ModelFolders.engineOf(python)).contains("Python");
    assertThat(ModelFolders.describeDetection()).isEqualTo("a folder holding a .pt / NAME-NNNN.params file (PyTorch),"
        + " model.onnx (OnnxRuntime) or model.py (Python)");
  }
}
