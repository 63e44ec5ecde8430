package io.kiln.engines.python.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelRunners;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.testsupport.PythonTests;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #36: a Python model whose interpreter lacks a module it imports fails its load at once, naming the
 * interpreter, the module and the interpreters of this machine that have it, instead of a traceback after every
 * restart; real interpreters (an interpreter without numpy: {@code PythonFaultsTest}).
 */
@Tag("slow")
class PythonModulesTest {

  @TempDir
  Path dir;

  private ModelSpec spec(Path model, String interpreter) {
    return ModelSpec.builder().uri(model).engine(ModelSpec.ENGINE_PYTHON)
        .input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 4)
        .python(PythonTests.options().interpreter(interpreter).build()).warmupBatchSizes(List.of(1)).build();
  }

  private Path model(String source) throws Exception {
    Path m = Files.createDirectories(dir.resolve("model"));
    Files.writeString(m.resolve("model.py"), source);
    return m;
  }

  private static final String CLASS = """
      class Model:
          def predict(self, inputs):
              return {"y": inputs["x"]}
      """;

  @Test
  void aModuleNoInterpreterHasIsNamedWithTheInterpreterAndTheLoadFailsBeforeAnyWorkerStarts() throws Exception {
    Path m = model("import os\nimport kiln_no_such_module_36 as k\nfrom kiln_nor_this_36.sub import y\n"
        + "try:\n    import kiln_optional_36\nexcept ImportError:\n    pass\n" + CLASS);
    String python = PythonTests.interpreter();

    assertThatThrownBy(() -> ModelRunners.load(spec(m, python), List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("the Python interpreter '" + python + "'")
        .hasMessageContaining("has no module kiln_no_such_module_36, kiln_nor_this_36, which model.py imports")
        .hasMessageContaining("no other python3 on this machine's PATH has them all")
        .hasMessageNotContaining("kiln_optional_36") // inside a try: optional by the model's own say
        .hasMessageNotContaining("Traceback");
  }

  @Test
  void aModuleImportedWhileLoadingIsReportedTheSameWay() throws Exception {
    Path m = model(CLASS + """
            def load(self, config, device):
                import kiln_late_module_36
        """);

    assertThatThrownBy(() -> ModelRunners.load(spec(m, PythonTests.interpreter()), List.of()))
        .isInstanceOf(ModelLoadException.class)
        .hasMessageContaining("has no module kiln_late_module_36")
        .hasMessageContaining("raised while loading: No module named 'kiln_late_module_36'");
  }

  @Test
  void aModelWhoseImportsAreAllThereLoadsAsBefore() throws Exception {
    Path m = model("import numpy as np\nimport json\n" + CLASS);
    try (var r = ModelRunners.load(spec(m, PythonTests.interpreter()), List.of())) {
      assertThat(r).isNotNull();
    }
  }
}
