package io.kiln.serve.impl;

import io.kiln.pools.ModelSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The engine a model folder shows, for a {@code model} section that leaves {@code engine} out: a folder
 * (or file) holding an {@code .onnx} file is {@value ModelSpec#ENGINE_ONNX}, one holding {@code model.py}
 * is {@value ModelSpec#ENGINE_PYTHON}, one holding a TorchScript {@code .pt} or DJL {@code -NNNN.params}
 * file is {@value ModelSpec#ENGINE_PYTORCH}. A folder showing several, or none, or one the loader may not
 * look at (model paths unchecked), shows nothing: the engine must then be written.
 */
final class EngineDetection {

  private EngineDetection() {
  }

  static String describe() {
    return "a folder holding model.onnx (" + ModelSpec.ENGINE_ONNX + "), model.py (" + ModelSpec.ENGINE_PYTHON
        + ") or a .pt / NAME-NNNN.params file (" + ModelSpec.ENGINE_PYTORCH + ")";
  }

  static Optional<String> detect(String uri, SpecReader.Options options) {
    if (uri == null || uri.isBlank() || uri.startsWith(ModelSpec.BUILTIN_PREFIX) || !options.checkModelPaths()) {
      return Optional.empty();
    }
    Path path;
    try {
      path = Path.of(uri);
    } catch (InvalidPathException e) {
      return Optional.empty();
    }
    if (!path.isAbsolute() && options.baseDir() != null) {
      path = options.baseDir().resolve(path);
    }
    TreeSet<String> engines = new TreeSet<>();
    if (Files.isRegularFile(path)) {
      of(path.getFileName().toString()).ifPresent(engines::add);
    } else if (Files.isDirectory(path)) {
      try (Stream<Path> files = Files.list(path)) {
        files.filter(Files::isRegularFile).forEach(f -> of(f.getFileName().toString()).ifPresent(engines::add));
      } catch (IOException e) {
        return Optional.empty();
      }
    }
    return engines.size() == 1 ? Optional.of(engines.first()) : Optional.empty();
  }

  private static Optional<String> of(String fileName) {
    if (fileName.endsWith(".onnx")) {
      return Optional.of(ModelSpec.ENGINE_ONNX);
    }
    if (fileName.equals("model.py")) {
      return Optional.of(ModelSpec.ENGINE_PYTHON);
    }
    if (fileName.endsWith(".pt") || fileName.matches(".+-\\d{4}\\.params")) {
      return Optional.of(ModelSpec.ENGINE_PYTORCH);
    }
    return Optional.empty();
  }
}
