package io.kiln.pools;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import io.kiln.pools.spi.Engine;
import io.kiln.pools.spi.Engines;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * How Kiln's engines' model files are named: workers find their model by these names, and a deployment that leaves
 * {@code engine} out is given the one its folder shows (each engine {@link io.kiln.pools.spi.Engine#recognizes
 * recognises} its own files).
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
   * The engine a file or folder shows: the one {@link io.kiln.pools.spi.Engine#recognizes recognising} its files
   * (an {@code .onnx} file, {@value #PYTHON_FILE}, a TorchScript {@code .pt} or DJL {@code NAME-NNNN.params} file for
   * Kiln's own engines); empty for a folder showing none, several, or that cannot be read. Blocking (lists the folder).
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

  /**
   * What a folder holds when it shows an engine, for messages: {@code a folder holding model.onnx (OnnxRuntime), ...}
   * over every engine detected from folders.
   */
  public static String describeDetection() {
    List<String> shown = Engines.installed().all().stream().filter(e -> !e.capabilities().modelFiles().isEmpty())
        .map(e -> e.capabilities().modelFiles() + " (" + e.name() + ")").toList();
    return "a folder holding " + (shown.size() <= 1 ? String.join("", shown)
        : String.join(", ", shown.subList(0, shown.size() - 1)) + " or " + shown.get(shown.size() - 1));
  }

  private static Optional<String> engineOfFile(String fileName) {
    // A file two engines both claim shows neither: several engines, as for a folder holding two kinds of model.
    List<String> claims = Engines.installed().all().stream().filter(e -> e.recognizes(fileName)).map(Engine::name)
        .toList();
    return claims.size() == 1 ? Optional.of(claims.get(0)) : Optional.empty();
  }
}
