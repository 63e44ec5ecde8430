package io.kiln.engines.pytorch.impl;

import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Finds the model file in a spec's uri and tells its format: {@code NAME.pt} is TorchScript,
 * {@code NAME-NNNN.params} (DJL's naming: model name and epoch) is DJL parameters.
 *
 * @param dir the folder holding the file
 * @param prefix the name DJL loads it by ({@code NAME})
 * @param format {@link ModelSpec#FORMAT_TORCHSCRIPT} or {@link ModelSpec#FORMAT_DJL_PARAMS}
 */
public record ModelFiles(Path dir, String prefix, String format) {

  private static final Pattern PARAMS = io.kiln.pools.ModelFolders.DJL_PARAMS;

  /** @throws ModelLoadException if nothing, or more than one candidate, matches */
  static ModelFiles resolve(ModelSpec spec) {
    Path uri = spec.uri();
    if (Files.isRegularFile(uri)) {
      ModelFiles f = classify(uri.toAbsolutePath().getParent(), uri.getFileName().toString());
      if (f == null) {
        throw new ModelLoadException("model file " + uri + " is neither NAME.pt (TorchScript) nor NAME-NNNN.params (DJL)");
      }
      return checkFormat(spec, f);
    }
    if (!Files.isDirectory(uri)) {
      throw new ModelLoadException("model uri " + uri + " (" + uri.toAbsolutePath() + ") does not exist");
    }
    TreeSet<String> torchscript = new TreeSet<>();
    TreeSet<String> params = new TreeSet<>();
    try (Stream<Path> files = Files.list(uri)) {
      for (Path p : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
        ModelFiles f = classify(uri, p.getFileName().toString());
        if (f != null) {
          (f.format.equals(ModelSpec.FORMAT_TORCHSCRIPT) ? torchscript : params).add(f.prefix);
        }
      }
    } catch (IOException e) {
      throw new ModelLoadException("cannot list model folder " + uri + ": " + e.getMessage(), e);
    }
    String format = spec.format();
    if (format.equals(ModelSpec.FORMAT_AUTO)) {
      if (!torchscript.isEmpty() && !params.isEmpty()) {
        throw new ModelLoadException("model folder " + uri + " holds both TorchScript " + torchscript
            + " and DJL parameter files " + params + "; set format to " + ModelSpec.FORMAT_TORCHSCRIPT + " or "
            + ModelSpec.FORMAT_DJL_PARAMS);
      }
      format = params.isEmpty() ? ModelSpec.FORMAT_TORCHSCRIPT : ModelSpec.FORMAT_DJL_PARAMS;
    }
    TreeSet<String> names = format.equals(ModelSpec.FORMAT_TORCHSCRIPT) ? torchscript : params;
    if (names.isEmpty()) {
      throw new ModelLoadException("model folder " + uri + " holds no "
          + (format.equals(ModelSpec.FORMAT_TORCHSCRIPT) ? "TorchScript file (NAME.pt)" : "DJL parameter file (NAME-NNNN.params)")
          + (spec.format().equals(ModelSpec.FORMAT_AUTO) ? " and no DJL parameter file (NAME-NNNN.params)" : ""));
    }
    if (names.size() > 1) {
      throw new ModelLoadException("model folder " + uri + " holds several models " + List.copyOf(names)
          + "; point uri at one file");
    }
    return checkFormat(spec, new ModelFiles(uri.toAbsolutePath(), names.first(), format));
  }

  private static ModelFiles classify(Path dir, String fileName) {
    if (fileName.endsWith(".pt") && fileName.length() > 3) {
      return new ModelFiles(dir, fileName.substring(0, fileName.length() - 3), ModelSpec.FORMAT_TORCHSCRIPT);
    }
    Matcher m = PARAMS.matcher(fileName);
    return m.matches() ? new ModelFiles(dir, m.group(1), ModelSpec.FORMAT_DJL_PARAMS) : null;
  }

  private static ModelFiles checkFormat(ModelSpec spec, ModelFiles found) {
    if (!spec.format().equals(ModelSpec.FORMAT_AUTO) && !spec.format().equals(found.format)) {
      throw new ModelLoadException("model " + spec.uri() + " is " + found.format + " but the spec says " + spec.format());
    }
    if (found.format.equals(ModelSpec.FORMAT_DJL_PARAMS) && spec.architecture().isEmpty()) {
      throw new ModelLoadException("model " + spec.uri() + " is a DJL parameter file, which holds weights only: set "
          + "architecture to one of " + Architectures.describe());
    }
    if (found.format.equals(ModelSpec.FORMAT_TORCHSCRIPT) && !spec.architecture().isEmpty()) {
      throw new ModelLoadException("model " + spec.uri() + " is TorchScript, which carries its own architecture: "
          + "remove architecture '" + spec.architecture() + "'");
    }
    return found;
  }
}
