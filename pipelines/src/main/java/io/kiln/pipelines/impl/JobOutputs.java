package io.kiln.pipelines.impl;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * A job's output folder, which is the truth about what finished: one {@code <key>.json} per input with a
 * result, {@code key} the SHA-256 of the input's URI (as the node cache keys it). A result is written to a
 * temporary file in the same folder and renamed over its name atomically, so a reader (or a
 * resumed job) sees either no result or a whole one, and a retried or re-run input replaces its result with
 * an equal one instead of adding a second. Inputs that failed after their retries get
 * {@code _failed/<key>.json} (the cause), removed when a later attempt succeeds; {@code _job.json} holds the
 * job's spec. Blocking; call it on worker threads. Thread-safe (files are written whole and renamed).
 */
public final class JobOutputs {

  static final String SUFFIX = ".json";
  static final String TEMP_PREFIX = ".tmp-";

  private final Path dir;

  public JobOutputs(Path dir) {
    this.dir = dir;
  }

  public Path dir() {
    return dir;
  }

  public Path result(String key) {
    return dir.resolve(key + SUFFIX);
  }

  Path failed(String key) {
    return dir.resolve("_failed").resolve(key + SUFFIX);
  }

  /**
   * Creates the folder, removes temporary files an interrupted writer left, writes the spec, and answers the
   * keys that have a result.
   */
  public Set<String> prepare(byte[] specJson) throws IOException {
    Files.createDirectories(dir.resolve("_failed"));
    Set<String> done = new HashSet<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String name = p.getFileName().toString();
        if (name.startsWith(TEMP_PREFIX)) {
          Files.deleteIfExists(p);
        } else if (name.endsWith(SUFFIX) && io.kiln.pipelines.NodeCache.isKey(name.substring(0,
            name.length() - SUFFIX.length())) && Files.size(p) > 0) {
          done.add(name.substring(0, name.length() - SUFFIX.length()));
        }
      }
    }
    atomicWrite(dir.resolve("_job.json"), specJson);
    return done;
  }

  /** Writes {@code key}'s result (replacing an earlier one whole) and drops its failure record. */
  public void writeResult(String key, byte[] json) throws IOException {
    atomicWrite(result(key), json);
    Files.deleteIfExists(failed(key));
  }

  public void writeFailure(String key, byte[] json) throws IOException {
    atomicWrite(failed(key), json);
  }

  private void atomicWrite(Path target, byte[] bytes) throws IOException {
    Path tmp = target.resolveSibling(TEMP_PREFIX + target.getFileName() + "-" + UUID.randomUUID());
    try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.wrap(bytes);
      while (b.hasRemaining()) {
        ch.write(b);
      }
      // Not forced to disk: the rename is atomic against a crashed process (what a resume recovers from); after
      // a power loss a result may be missing or empty, and an empty one counts as missing (see prepare).
    }
    try {
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.deleteIfExists(tmp);
      throw new IOException("the output folder " + dir + " cannot rename atomically; results need a filesystem"
          + " that can", e);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
