package io.kiln.pools.spi;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unpacks an engine's native libraries from its jar once per user and content into a cache folder that later JVMs
 * reuse, for an engine whose loader otherwise copies them into a new temporary folder per process (ONNX Runtime:
 * {@code /tmp/onnxruntime-java*}, 20 MB each, left behind by every JVM that is killed and, empty, by every one that
 * exits). The folder is {@code <cache>/natives/<name>-<key>}, where the key is the libraries' sizes and CRCs (the
 * jar's own, read without unpacking); {@code <cache>} is {@code -Dkiln.cache.dir}, {@code $KILN_CACHE_DIR},
 * {@code $XDG_CACHE_HOME/kiln} or {@code ~/.cache/kiln}, the first set. A library is written beside its final name
 * and moved into place atomically, so JVMs starting at once never load half a file.
 */
public final class NativeCache {

  private static final Logger LOG = LoggerFactory.getLogger(NativeCache.class);
  /** ONNX Runtime's loader reads its libraries from this folder when set (and unpacks none into a temporary one). */
  public static final String ONNX_RUNTIME_PATH = "onnxruntime.native.path";
  private static final List<String> ONNX_RUNTIME_LIBRARIES = List.of("onnxruntime", "onnxruntime4j_jni",
      "onnxruntime_providers_shared", "onnxruntime_providers_cuda", "onnxruntime_providers_tensorrt");
  private static boolean onnxRuntimeDone;

  private NativeCache() {
  }

  /**
   * Points ONNX Runtime at the cached copy of the libraries {@code loader} (the one holding ONNX Runtime's jar) has for
   * this platform, unpacked by {@link #unpack} the first time; call before ONNX Runtime first loads. Leaves a
   * {@code -Donnxruntime.native.path} the user set alone, and when the cache cannot be written logs why and leaves ONNX
   * Runtime to unpack into a temporary folder as it does by default.
   */
  public static synchronized void onnxRuntime(ClassLoader loader) {
    if (onnxRuntimeDone || System.getProperty(ONNX_RUNTIME_PATH) != null) {
      return;
    }
    onnxRuntimeDone = true;
    String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(java.util.Locale.ROOT);
    String platform = (os.contains("mac") ? "osx" : os.contains("win") ? "win" : "linux") + "-"
        + (arch.equals("amd64") || arch.equals("x86_64") ? "x64" : arch);
    List<String> files = ONNX_RUNTIME_LIBRARIES.stream().map(System::mapLibraryName).toList();
    try {
      unpack(root(), "onnxruntime", loader, "ai/onnxruntime/native/" + platform + "/", files)
          .ifPresent(dir -> System.setProperty(ONNX_RUNTIME_PATH, dir.toString()));
    } catch (UncheckedIOException e) {
      LOG.warn("{}; ONNX Runtime unpacks them into a temporary folder instead", e.getMessage());
    }
  }

  /** The cache root this process uses, from its properties and environment. */
  public static Path root() {
    return root(System.getProperties().getProperty("kiln.cache.dir"), System.getenv());
  }

  static Path root(String property, Map<String, String> env) {
    if (property != null && !property.isBlank()) {
      return Path.of(property);
    }
    String kiln = env.get("KILN_CACHE_DIR");
    if (kiln != null && !kiln.isBlank()) {
      return Path.of(kiln);
    }
    String xdg = env.get("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isBlank()) {
      return Path.of(xdg, "kiln");
    }
    return Path.of(System.getProperty("user.home"), ".cache", "kiln");
  }

  /**
   * The folder holding those of {@code libraries} (file names) that {@code loader} has under {@code resourceFolder}
   * (e.g. {@code ai/onnxruntime/native/linux-x64/}), unpacked under {@code root} if not there already; empty when the
   * loader has none of them.
   *
   * @throws UncheckedIOException when the folder cannot be made or written (a read-only home)
   */
  public static Optional<Path> unpack(Path root, String name, ClassLoader loader, String resourceFolder,
      List<String> libraries) {
    try {
      List<Library> present = new ArrayList<>();
      CRC32 key = new CRC32();
      for (String lib : libraries) {
        URL url = loader.getResource(resourceFolder + lib);
        if (url != null) {
          Library l = Library.of(lib, url);
          present.add(l);
          key.update((lib + ':' + l.identity() + ';').getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
      }
      if (present.isEmpty()) {
        return Optional.empty();
      }
      Path dir = root.resolve("natives").resolve(name + "-" + Long.toHexString(key.getValue()));
      Files.createDirectories(dir);
      for (Library l : present) {
        Path file = dir.resolve(l.file());
        if (Files.isRegularFile(file) && (l.size() < 0 || Files.size(file) == l.size())) {
          continue;
        }
        Path part = Files.createTempFile(dir, "." + l.file(), ".part"); // owner-only until moved
        try (InputStream in = l.connection().getInputStream()) {
          Files.copy(in, part, StandardCopyOption.REPLACE_EXISTING);
          try {
            Files.move(part, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          } catch (AtomicMoveNotSupportedException e) {
            Files.move(part, file, StandardCopyOption.REPLACE_EXISTING);
          }
        } finally {
          Files.deleteIfExists(part);
        }
        LOG.info("unpacked {} ({} bytes) into {}", l.file(), Files.size(file), dir);
      }
      return Optional.of(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot unpack the " + name + " native libraries under " + root + ": "
          + e.getMessage(), e);
    }
  }

  /**
   * One library on the class path, through one connection: its size, and its identity for the folder's key (its size
   * and CRC as its jar lists them, or, outside a jar, its URL, size and modification time).
   */
  private record Library(String file, URLConnection connection, long size, String identity) {
    static Library of(String file, URL url) throws IOException {
      URLConnection c = url.openConnection();
      long size = c.getContentLengthLong();
      String identity = c instanceof JarURLConnection jar
          ? jar.getJarEntry().getSize() + "/" + Long.toHexString(jar.getJarEntry().getCrc())
          : url + "/" + size + "/" + c.getLastModified();
      return new Library(file, c, size, identity);
    }
  }
}
