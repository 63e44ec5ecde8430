package io.kiln.engines.pytorch;

import ai.djl.engine.Engine;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * "Bring your own libtorch": a libtorch already installed on the host (the {@code lib} folder of a Python
 * {@code torch}, or of a libtorch archive) that the PyTorch engine loads instead of the {@code pytorch-native-*}
 * jar, e.g. a CUDA build where the registry serves none. DJL loads it when {@code PYTORCH_LIBRARY_PATH},
 * {@code PYTORCH_VERSION} and {@code PYTORCH_FLAVOR} name it, but only with a JNI library
 * ({@code libdjl_torch.so}) built for exactly that libtorch version; Kiln never downloads one, so
 * {@link #inspect} checks up front that one is at hand and says which versions would work when none is.
 *
 * @param dir the folder holding {@code libtorch.so}
 * @param version the libtorch version without its local part ({@code 2.7.1})
 * @param flavor DJL's flavor: {@code cpu}, {@code cu128}, ...
 * @param jni where the matching JNI library comes from, for messages
 */
public record InstalledLibTorch(Path dir, String version, String flavor, String jni) {

  static final String LIBRARY_PATH = "PYTORCH_LIBRARY_PATH";
  static final String VERSION = "PYTORCH_VERSION";
  static final String FLAVOR = "PYTORCH_FLAVOR";
  private static final String LIBTORCH = "libtorch.so";
  private static final String JNI = "libdjl_torch.so";
  private static final String JNI_PROPERTIES = "jnilib/pytorch.properties";
  private static final Pattern PY_VERSION = Pattern.compile("(?m)^__version__\\s*=\\s*['\"]([^'\"]+)['\"]");
  private static final Pattern VERSION_TEXT = Pattern.compile("(\\d+\\.\\d+\\.\\d+)(?:[.a-z0-9]*)?(?:\\+([A-Za-z0-9.]+))?");
  private static final Pattern FLAVOR_TEXT = Pattern.compile("cpu|cu\\d{3}");

  /**
   * Checks {@code dir} and finds its version, flavor and a matching JNI library.
   *
   * @param version the libtorch version, or null to read it from {@code ../version.py} (a Python torch) or
   *     {@code ../build-version} (a libtorch archive)
   * @param flavor {@code cpu} or {@code cuNNN}, or null to take it from the version's local part ({@code +cu128})
   * @throws IllegalArgumentException naming what is missing or mismatched
   */
  public static InstalledLibTorch inspect(Path dir, String version, String flavor) {
    return inspect(dir, version, flavor, Engine.getDjlVersion(), InstalledLibTorch::classPathResource,
        ai.djl.util.Utils.getEngineCacheDir("pytorch"));
  }

  static InstalledLibTorch inspect(Path dir, String version, String flavor, String djlVersion,
                                   Function<String, InputStream> classPath, Path cacheDir) {
    Path abs = dir.toAbsolutePath().normalize();
    if (!Files.isDirectory(abs)) {
      throw new IllegalArgumentException("libtorch folder " + abs + " does not exist");
    }
    if (!Files.isRegularFile(abs.resolve(LIBTORCH))) {
      throw new IllegalArgumentException("libtorch folder " + abs + " has no " + LIBTORCH
          + " (give the lib folder, e.g. .../site-packages/torch/lib)");
    }
    String text = version != null && !version.isBlank() ? version.strip() : versionOf(abs);
    Matcher m = VERSION_TEXT.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("libtorch version '" + text + "' is not of the form 2.7.1 or 2.7.1+cu128");
    }
    String base = m.group(1);
    String chosen = flavor != null && !flavor.isBlank() ? flavor.strip().toLowerCase(Locale.ROOT)
        : flavorOf(abs, m.group(2));
    if (!FLAVOR_TEXT.matcher(chosen).matches()) {
      throw new IllegalArgumentException("libtorch flavor '" + chosen + "' is not cpu or cuNNN (e.g. cu128)");
    }
    String jni = findJni(abs, base, chosen, djlVersion, classPath, cacheDir);
    return new InstalledLibTorch(abs, base, chosen, jni);
  }

  /** The JVM-wide settings DJL reads when its PyTorch engine starts. */
  public Map<String, String> properties() {
    return Map.of(LIBRARY_PATH, dir.toString(), VERSION, version, FLAVOR, flavor);
  }

  /**
   * Points this process's PyTorch engine here. Call before the engine starts (the first PyTorch load); DJL
   * reads environment variables before system properties, so one set differently in the environment is an error.
   */
  public void apply() {
    for (Map.Entry<String, String> e : properties().entrySet()) {
      String env = System.getenv(e.getKey());
      if (env != null && !env.isBlank() && !env.equals(e.getValue())) {
        throw new IllegalArgumentException("the environment sets " + e.getKey() + "=" + env + ", which DJL reads before "
            + e.getValue() + "; unset it or make it agree");
      }
      System.setProperty(e.getKey(), e.getValue());
    }
  }

  /** One line for logs and {@code kiln up}'s banner. */
  public String describe() {
    return "libtorch " + version + " (" + flavor + ") from " + dir + ", JNI " + jni;
  }

  private static String versionOf(Path lib) {
    Path parent = lib.getParent();
    if (parent != null) {
      Path py = parent.resolve("version.py");
      if (Files.isRegularFile(py)) {
        Matcher m = PY_VERSION.matcher(read(py));
        if (m.find()) {
          return m.group(1);
        }
        throw new IllegalArgumentException(py + " has no __version__ line; give the version explicitly");
      }
      Path build = parent.resolve("build-version");
      if (Files.isRegularFile(build)) {
        return read(build).strip();
      }
    }
    throw new IllegalArgumentException("cannot tell the libtorch version of " + lib + " (no ../version.py of a Python"
        + " torch, no ../build-version of a libtorch archive); give the version explicitly");
  }

  private static String flavorOf(Path lib, String local) {
    if (local != null && FLAVOR_TEXT.matcher(local.toLowerCase(Locale.ROOT)).matches()) {
      return local.toLowerCase(Locale.ROOT);
    }
    if (Files.exists(lib.resolve("libtorch_cuda.so"))) {
      throw new IllegalArgumentException("libtorch in " + lib + " is a CUDA build but its version names no CUDA flavor;"
          + " give the flavor explicitly (e.g. cu128)");
    }
    return "cpu";
  }

  /** Where DJL itself would look for the JNI library, in its order, without downloading. */
  private static String findJni(Path lib, String version, String flavor, String djlVersion,
                                Function<String, InputStream> classPath, Path cacheDir) {
    for (Path p : new Path[] {lib.resolve(djlVersion + "-" + JNI), lib.resolve(JNI),
        cacheDir.resolve(version + "-" + flavor + "-" + classifier()).resolve(djlVersion + "-" + JNI)}) {
      if (Files.isRegularFile(p)) {
        return p.toString();
      }
    }
    String shipped = shippedJniVersion(classPath);
    String resource = "jnilib/" + classifier() + "/" + flavor + "/" + JNI;
    if (shipped != null && shipped.startsWith(version + "-" + djlVersion)) {
      try (InputStream in = classPath.apply(resource)) {
        if (in != null) {
          return "pytorch-jni " + shipped + " (" + flavor + ")";
        }
      } catch (IOException e) {
        throw new IllegalStateException("reading " + resource, e);
      }
      throw new IllegalArgumentException("pytorch-jni " + shipped + " has no " + flavor + " build for " + classifier()
          + "; see docs/gpu.md for the flavors it has");
    }
    throw new IllegalArgumentException("libtorch " + version + " (" + flavor + ") in " + lib + " has no matching JNI"
        + " library: DJL " + djlVersion + " ships " + JNI + " for PyTorch "
        + (shipped == null ? "(no pytorch-jni on the class path)" : shipped.substring(0, shipped.indexOf('-')))
        + " only, and Kiln never downloads one. Install that PyTorch version, put a " + JNI + " built for " + version
        + " into " + lib + ", or serve the model with the Python engine (docs/gpu.md)");
  }

  private static String shippedJniVersion(Function<String, InputStream> classPath) {
    try (InputStream in = classPath.apply(JNI_PROPERTIES)) {
      if (in == null) {
        return null;
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("jni_version");
    } catch (IOException e) {
      throw new IllegalStateException("reading " + JNI_PROPERTIES, e);
    }
  }

  private static InputStream classPathResource(String name) {
    return InstalledLibTorch.class.getClassLoader().getResourceAsStream(name);
  }

  private static String classifier() {
    String arch = System.getProperty("os.arch");
    return "linux-" + ("amd64".equals(arch) || "x86_64".equals(arch) ? "x86_64" : arch);
  }

  private static String read(Path p) {
    try {
      return Files.readString(p, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + p + ": " + e.getMessage(), e);
    }
  }
}
