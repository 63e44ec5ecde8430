package io.kiln.pools.testsupport;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.PythonOptions;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The interpreter and model folders of the Python engine's tests. The interpreter is
 * {@code -Dkiln.test.python=PATH} or Debian's {@code /usr/bin/python3} (never a {@code python3} found on
 * PATH, whose packages vary by machine), and it must import numpy: when it does not, tests fail with a
 * message saying what to install rather than skip.
 */
public final class PythonTests {

  public static final String PROPERTY = "kiln.test.python";
  private static String interpreter;

  private PythonTests() {
  }

  /** The checked interpreter's path. */
  public static synchronized String interpreter() {
    if (interpreter == null) {
      String path = System.getProperty(PROPERTY, "/usr/bin/python3");
      String fix = " (install it: apt-get install -y python3 python3-numpy, or point -D" + PROPERTY + "= at an"
          + " interpreter that has numpy)";
      if (!Files.isExecutable(Path.of(path))) {
        throw new IllegalStateException("the Python engine's tests need " + path + fix);
      }
      try {
        Process p = new ProcessBuilder(path, "-c", "import numpy; print(numpy.__version__)").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
          throw new IllegalStateException(path + " cannot import numpy" + fix + ": " + out);
        }
      } catch (IOException e) {
        throw new IllegalStateException("cannot run " + path + fix, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      interpreter = path;
    }
    return interpreter;
  }

  /** Options with the test interpreter. */
  public static PythonOptions.Builder options() {
    return PythonOptions.builder().interpreter(interpreter());
  }

  /** The MLP of {@code deploy/examples/python}: input FP32 [-1, 64], output FP32 [-1, 10]. */
  public static ModelSpec.Builder mlp() {
    return ModelSpec.builder().uri(repositoryRoot().resolve("deploy/examples/python")).engine(ModelSpec.ENGINE_PYTHON)
        .input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 10)
        .python(options().build()).intraOpThreads(1);
  }

  /**
   * The test model {@code faulty/model.py} (see its docstring): x FP32 [-1, 4] → y = x * scale, faults by
   * marker values, with {@code config}.
   */
  public static ModelSpec.Builder faulty(Map<String, Object> config) {
    return ModelSpec.builder().uri(testModel("faulty")).engine(ModelSpec.ENGINE_PYTHON)
        .input("x", DataType.FP32, -1, 4).output("y", DataType.FP32, -1, 4)
        .python(options().config(config).build()).warmupBatchSizes(List.of(1));
  }

  /** A folder of model-pools' test resources under {@code io/kiln/pools/python/}. */
  public static Path testModel(String name) {
    try {
      return Path.of(PythonTests.class.getResource("/io/kiln/pools/python/" + name + "/model.py").toURI()).getParent();
    } catch (URISyntaxException | NullPointerException e) {
      throw new IllegalStateException("no test model " + name, e);
    }
  }

  public static Path repositoryRoot() {
    return ProjectModels.modelsDir().getParent();
  }

  /** The live Python worker processes (children of this JVM) started for {@code label}, e.g. a worker's name. */
  public static List<ProcessHandle> processesOf(String label) {
    return ProcessHandle.current().children()
        .filter(p -> p.info().arguments().map(a -> a.length > 0 && a[a.length - 1].equals(label)
            && String.join(" ", a).contains("kiln_worker.py")).orElse(false))
        .toList();
  }
}
