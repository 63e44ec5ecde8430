package io.kiln.pipelines;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * How a node runs pipelines. Immutable; validated on construction.
 *
 * @param cacheDir this node's cache folder (default {@code <kiln.home>/.kiln/cache/<nodeId>})
 * @param cacheMaxBytes the cache's size cap; least recently used inputs not in use are evicted beyond it
 * @param fileRoots folders {@code file://} inputs may be read from (default: {@code <kiln.home>}); every
 *     other path is refused, so a run cannot read arbitrary files of the node
 * @param stepsDir folder of jars with user {@link Step} classes, loaded beside the application's classes
 *     (default {@code <kiln.home>/steps}; absent: the application's classes only)
 * @param httpTimeout timeout of {@code http(s)://} fetches and of webhook connections
 * @param runRetention finished runs are forgotten this long after they ended
 * @param maxActiveRuns runs this node coordinates at once at most; more are refused (503)
 * @param maxOutputElements infer results with more elements than this keep shape and type but not data
 * @param clockMillis wall clock for timestamps (tests inject one)
 */
public record PipelineOptions(Path cacheDir, long cacheMaxBytes, List<Path> fileRoots, Path stepsDir,
                              Duration httpTimeout, Duration runRetention, int maxActiveRuns, long maxOutputElements,
                              LongSupplier clockMillis) {

  public static final Duration DEFAULT_RUN_RETENTION = Duration.ofHours(24);
  public static final int DEFAULT_MAX_ACTIVE_RUNS = 10_000;
  public static final long DEFAULT_MAX_OUTPUT_ELEMENTS = 65_536;

  public PipelineOptions {
    Objects.requireNonNull(cacheDir, "cacheDir");
    fileRoots = List.copyOf(fileRoots);
    Objects.requireNonNull(stepsDir, "stepsDir");
    Objects.requireNonNull(httpTimeout, "httpTimeout");
    Objects.requireNonNull(runRetention, "runRetention");
    Objects.requireNonNull(clockMillis, "clockMillis");
    if (cacheMaxBytes < 1 || maxActiveRuns < 1 || maxOutputElements < 0) {
      throw new IllegalArgumentException("cacheMaxBytes and maxActiveRuns must be positive, maxOutputElements"
          + " not negative");
    }
  }

  /** Defaults for a node of the distribution at {@code kilnHome}. */
  public static PipelineOptions defaults(Path kilnHome, String nodeId) {
    return new PipelineOptions(kilnHome.resolve(".kiln").resolve("cache").resolve(nodeId),
        NodeCache.Options.DEFAULT_MAX_BYTES, List.of(kilnHome), kilnHome.resolve("steps"),
        NodeCache.Options.DEFAULT_HTTP_TIMEOUT,
        DEFAULT_RUN_RETENTION, DEFAULT_MAX_ACTIVE_RUNS, DEFAULT_MAX_OUTPUT_ELEMENTS, System::currentTimeMillis);
  }

  public PipelineOptions withCacheDir(Path dir) {
    return new PipelineOptions(dir, cacheMaxBytes, fileRoots, stepsDir, httpTimeout, runRetention, maxActiveRuns,
        maxOutputElements, clockMillis);
  }

  public PipelineOptions withCacheMaxBytes(long bytes) {
    return new PipelineOptions(cacheDir, bytes, fileRoots, stepsDir, httpTimeout, runRetention, maxActiveRuns,
        maxOutputElements, clockMillis);
  }

  public PipelineOptions withFileRoots(List<Path> roots) {
    return new PipelineOptions(cacheDir, cacheMaxBytes, roots, stepsDir, httpTimeout, runRetention, maxActiveRuns,
        maxOutputElements, clockMillis);
  }

  public PipelineOptions withStepsDir(Path dir) {
    return new PipelineOptions(cacheDir, cacheMaxBytes, fileRoots, dir, httpTimeout, runRetention, maxActiveRuns,
        maxOutputElements, clockMillis);
  }

  public PipelineOptions withRunRetention(Duration retention) {
    return new PipelineOptions(cacheDir, cacheMaxBytes, fileRoots, stepsDir, httpTimeout, retention, maxActiveRuns,
        maxOutputElements, clockMillis);
  }

  public PipelineOptions withMaxActiveRuns(int n) {
    return new PipelineOptions(cacheDir, cacheMaxBytes, fileRoots, stepsDir, httpTimeout, runRetention, n, maxOutputElements,
        clockMillis);
  }

  NodeCache.Options cacheOptions() {
    return new NodeCache.Options(cacheDir, cacheMaxBytes, fileRoots, httpTimeout);
  }
}
