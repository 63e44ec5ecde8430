package io.kiln.deploy.e2e;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The interpreter Python workers run in these tests: {@code -Dkiln.test.python} or Debian's
 * {@code /usr/bin/python3} with numpy ({@code ./run-tests} installs it), never a shim found on PATH.
 */
final class PythonInterpreter {

  private PythonInterpreter() {
  }

  static String path() {
    String path = System.getProperty("kiln.test.python", "/usr/bin/python3");
    if (!Files.isExecutable(Path.of(path))) {
      throw new IllegalStateException(path + " is missing: install Debian's python3 and python3-numpy"
          + " (./run-tests does, as root) or point -Dkiln.test.python at an interpreter with numpy");
    }
    return path;
  }
}
