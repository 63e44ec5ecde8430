package io.kiln.serve.impl;

import io.kiln.pools.ModelFolders;
import io.kiln.pools.ModelSpec;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The engine a model folder shows ({@link ModelFolders#engineOf}), for a {@code model} section that leaves
 * {@code engine} out; a folder the loader may not look at (model paths unchecked), or a builtin uri, shows
 * nothing: the engine must then be written.
 */
final class EngineDetection {

  private EngineDetection() {
  }

  static String describe() {
    return ModelFolders.describeDetection();
  }

  static Optional<String> detect(String uri, SpecReader.Options options) {
    if (uri == null || uri.isBlank() || uri.startsWith(ModelSpec.BUILTIN_PREFIX) || !options.checkModelPaths()
        || io.kiln.pools.ModelUris.scheme(uri).isPresent()) {
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
    return ModelFolders.engineOf(path);
  }
}
