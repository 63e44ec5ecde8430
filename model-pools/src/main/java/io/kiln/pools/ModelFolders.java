package io.kiln.pools;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * How each engine's model files are named, in one place: workers find their model by these names, and a
 * deployment that leaves {@code engine} out is given the one its folder shows.
 */
public final class ModelFolders {

  /** A Python model's class lives in this file of its folder. */
  public static final String PYTHON_FILE = "model.py";
  /** The file an ONNX model folder holds (or the folder's only {@code .onnx} file). */
  public static final String ONNX_FILE = "model.onnx";
  /** DJL's parameter files: {@code NAME-NNNN.params} (model name and epoch). */
  public static final Pattern DJL_PARAMS = Pattern.compile("(.+)-\\d{4}\\.params");

  private ModelFolders() {
  }

  /**
   * The engine a file or folder shows: an {@code .onnx} file is {@value ModelSpec#ENGINE_ONNX},
   * {@value #PYTHON_FILE} is {@value ModelSpec#ENGINE_PYTHON}, a TorchScript {@code .pt} or DJL
   * {@code NAME-NNNN.params} file is {@value ModelSpec#ENGINE_PYTORCH}; empty for a folder showing none,
   * several, or that cannot be read. Blocking (lists the folder).
   */
  public static Optional<String> engineOf(Path path) {
    TreeSet<String> engines = new TreeSet<>();
    if (Files.isRegularFile(path)) {
      engineOfFile(path.getFileName().toString()).ifPresent(engines::add);
    } else if (Files.isDirectory(path)) {
      try (Stream<Path> files = Files.list(path)) {
        files.filter(Files::isRegularFile)
            .forEach(f -> engineOfFile(f.getFileName().toString()).ifPresent(engines::add));
      } catch (IOException e) {
        return Optional.empty();
      }
    }
    return engines.size() == 1 ? Optional.of(engines.first()) : Optional.empty();
  }

  private static Optional<String> engineOfFile(String fileName) {
    if (fileName.endsWith(".onnx")) {
      return Optional.of(ModelSpec.ENGINE_ONNX);
    }
    if (fileName.equals(PYTHON_FILE)) {
      return Optional.of(ModelSpec.ENGINE_PYTHON);
    }
    if (fileName.endsWith(".pt") || DJL_PARAMS.matcher(fileName).matches()) {
      return Optional.of(ModelSpec.ENGINE_PYTORCH);
    }
    return Optional.empty();
  }
}
