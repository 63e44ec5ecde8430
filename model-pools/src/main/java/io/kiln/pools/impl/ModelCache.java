package io.kiln.pools.impl;

import io.kiln.pools.ModelLoadException;
import io.kiln.pools.ModelSpec;
import io.kiln.pools.ModelUris;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionException;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's cache of remote models: each one downloaded once into {@code <dir>/<key>}, where the key is
 * the SHA-256 of the URI and its declared sha256, written into a temporary folder beside it and renamed into
 * place (so a reader sees a complete model or none). Loads of one key on this node share one download.
 * Blocking: call it on the worker thread that loads the model, never on an event loop.
 */
public final class ModelCache {

  private static final Logger log = LoggerFactory.getLogger(ModelCache.class);
  private static final Map<Options, ModelCache> NODE = new ConcurrentHashMap<>();

  /**
   * @param dir where models are cached
   * @param caPem a PEM file of the certificate authorities HTTPS servers are checked against, null for the JVM's
   *     trust store
   * @param maxBytes the most a download, or an archive's unpacked files, may add up to
   * @param s3 the credentials, region and endpoint for {@code s3://} uris
   * @param readTimeout how long a download may go without receiving a byte (headers included) before it fails
   */
  public record Options(Path dir, Path caPem, long maxBytes, S3Source.Credentials s3, Duration readTimeout) {
    public static final long DEFAULT_MAX_BYTES = 32L << 30;
    public static final Duration DEFAULT_READ_TIMEOUT = io.kiln.runtime.TimeoutPolicy.MODEL_DOWNLOAD_READ.timeout();

    /** Without S3 credentials. */
    public Options(Path dir, Path caPem, long maxBytes) {
      this(dir, caPem, maxBytes, S3Source.Credentials.NONE);
    }

    /** With the default read timeout. */
    public Options(Path dir, Path caPem, long maxBytes, S3Source.Credentials s3) {
      this(dir, caPem, maxBytes, s3, DEFAULT_READ_TIMEOUT);
    }

    public Options {
      Objects.requireNonNull(dir, "dir");
      Objects.requireNonNull(s3, "s3");
      Objects.requireNonNull(readTimeout, "readTimeout");
      if (maxBytes < 1) {
        throw new IllegalArgumentException("maxBytes: must be positive, got " + maxBytes);
      }
      if (readTimeout.isNegative() || readTimeout.isZero()) {
        throw new IllegalArgumentException("readTimeout: must be positive, got " + readTimeout);
      }
    }

    /** These options with another read timeout. */
    public Options withReadTimeout(Duration timeout) {
      return new Options(dir, caPem, maxBytes, s3, timeout);
    }

    /**
     * From system properties, then the environment: {@code kiln.model.cache} / {@code KILN_MODEL_CACHE} (default
     * {@code ${kiln.home}/.kiln/models}, beside the node's other files; {@code kiln.home} defaults to the working
     * directory, as for the node),
     * {@code kiln.model.ca} / {@code KILN_MODEL_CA}, {@code kiln.model.maxBytes} / {@code KILN_MODEL_MAX_BYTES} and
     * {@code kiln.model.readTimeoutMs} / {@code KILN_MODEL_READ_TIMEOUT_MS}.
     */
    public static Options fromEnvironment() {
      String dir = setting("kiln.model.cache", "KILN_MODEL_CACHE");
      Path cache = dir != null ? Path.of(dir)
          : Path.of(System.getProperty("kiln.home", ".")).resolve(".kiln").resolve("models");
      String ca = setting("kiln.model.ca", "KILN_MODEL_CA");
      String max = setting("kiln.model.maxBytes", "KILN_MODEL_MAX_BYTES");
      long maxBytes;
      try {
        maxBytes = max == null ? DEFAULT_MAX_BYTES : Long.parseLong(max.trim());
      } catch (NumberFormatException e) {
        throw new ModelLoadException("kiln.model.maxBytes / KILN_MODEL_MAX_BYTES: not a number: '" + max + "'");
      }
      String read = setting("kiln.model.readTimeoutMs", "KILN_MODEL_READ_TIMEOUT_MS");
      Duration readTimeout;
      try {
        readTimeout = read == null ? DEFAULT_READ_TIMEOUT : Duration.ofMillis(Long.parseLong(read.trim()));
      } catch (NumberFormatException e) {
        throw new ModelLoadException("kiln.model.readTimeoutMs / KILN_MODEL_READ_TIMEOUT_MS: not a number: '" + read
            + "'");
      }
      if (readTimeout.isNegative() || readTimeout.isZero()) {
        throw new ModelLoadException("kiln.model.readTimeoutMs / KILN_MODEL_READ_TIMEOUT_MS: must be positive, got "
            + read);
      }
      S3Source.Credentials s3;
      try {
        s3 = S3Source.Credentials.fromEnvironment();
      } catch (IllegalArgumentException e) {
        throw new ModelLoadException(e.getMessage(), e);
      }
      return new Options(cache.toAbsolutePath().normalize(), ca == null ? null : Path.of(ca), maxBytes, s3,
          readTimeout);
    }

    private static String setting(String property, String env) {
      String v = System.getProperty(property);
      v = v == null || v.isBlank() ? System.getenv(env) : v;
      return v == null || v.isBlank() ? null : v;
    }
  }

  private final Options options;
  private final Map<String, CompletableFuture<Path>> inFlight = new ConcurrentHashMap<>();
  private final HttpsSource https;
  private final S3Source s3;

  public ModelCache(Options options) {
    this.options = options;
    this.https = new HttpsSource(options.caPem(), options.maxBytes(), options.readTimeout());
    this.s3 = new S3Source(https, options.s3(), java.time.Clock.systemUTC());
  }

  /** The node's cache as its system properties and environment configure it now. */
  public static ModelCache forNode() {
    return NODE.computeIfAbsent(Options.fromEnvironment(), ModelCache::new);
  }

  public Options options() {
    return options;
  }

  /** {@code spec} itself if its model is local, else a copy whose uri is the cached folder (downloaded if need be). */
  public ModelSpec localize(ModelSpec spec) {
    if (spec.remoteUri().isEmpty()) {
      return spec;
    }
    Path folder = fetch(spec.remoteUri().get(), spec.sha256());
    return spec.toBuilder().uri(folder).sha256("").build();
  }

  /** The cached folder of {@code uri}, downloading it first if this node has not. */
  public Path fetch(URI uri, String sha256) {
    String key = key(uri, sha256);
    Path target = options.dir().resolve(key);
    if (Files.isDirectory(target)) {
      log.debug("model {}: cached in {}", uri, target);
      return modelFolder(target);
    }
    CompletableFuture<Path> mine = new CompletableFuture<>();
    CompletableFuture<Path> shared = inFlight.putIfAbsent(key, mine);
    if (shared != null) {
      log.info("model {}: joining the download already under way", uri);
      try {
        return shared.join();
      } catch (CompletionException e) {
        throw e.getCause() instanceof RuntimeException r ? r : e;
      }
    }
    try {
      Path done = modelFolder(download(uri, sha256, target));
      mine.complete(done);
      return done;
    } catch (RuntimeException e) {
      mine.completeExceptionally(e);
      throw e;
    } finally {
      inFlight.remove(key, mine);
    }
  }

  /** sha256(uri + "\n" + sha256), hex: a changed digest is another model, never the stale one. */
  static String key(URI uri, String sha256) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(d.digest((uri + "\n" + sha256).getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private Path download(URI uri, String sha256, Path target) {
    Path tmp = options.dir().resolve(".tmp-" + target.getFileName() + "-" + UUID.randomUUID());
    try {
      Files.createDirectories(tmp);
      String name = fileName(uri);
      if (uri.getScheme().equalsIgnoreCase(ModelUris.S3)) {
        s3.download(uri, sha256, tmp);
      } else if (ModelArchives.isArchive(name)) {
        Path file = options.dir().resolve(tmp.getFileName() + ".download");
        try {
          https.download(uri, sha256, file);
          ModelArchives.unpack(file, name, tmp, options.maxBytes());
        } finally {
          Files.deleteIfExists(file);
        }
      } else {
        https.download(uri, sha256, tmp.resolve(name));
      }
      try {
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (FileAlreadyExistsException | DirectoryNotEmptyException e) {
        // another process on this host finished the same model first: theirs is as good
        deleteTree(tmp);
      } catch (AtomicMoveNotSupportedException e) {
        deleteTree(tmp);
        throw new ModelLoadException("model cache " + options.dir() + " cannot rename atomically: " + e.getMessage(), e);
      }
      log.info("model {}: cached in {}", uri, target);
      return target;
    } catch (IOException e) {
      deleteQuietly(tmp);
      throw new ModelLoadException("model " + uri + ": could not write it into the model cache " + options.dir() + ": "
          + e, e);
    } catch (RuntimeException e) {
      deleteQuietly(tmp);
      throw e;
    }
  }

  /** An archive with a single top-level folder (a common layout) is that folder's model. */
  private static Path modelFolder(Path cached) {
    try (Stream<Path> s = Files.list(cached)) {
      var entries = s.limit(2).toList();
      return entries.size() == 1 && Files.isDirectory(entries.get(0)) ? entries.get(0) : cached;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static String fileName(URI uri) {
    String path = uri.getPath();
    String name = path.substring(path.lastIndexOf('/') + 1);
    if (name.isEmpty() || name.equals(".") || name.equals("..")) {
      throw new ModelLoadException("model " + uri + ": the uri names no file");
    }
    return name;
  }

  private static void deleteQuietly(Path p) {
    try {
      deleteTree(p);
    } catch (IOException | UncheckedIOException e) {
      log.warn("could not remove the partial download {}: {}", p, e.toString());
    }
  }

  static void deleteTree(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(x);
      }
    }
  }
}
