package io.kiln.pipelines.impl;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
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
 * job's spec.
 *
 * <p><b>Durability.</b> {@link #writeResults} writes a group of results, forces them to disk together, renames
 * them and forces the folder once: when it returns, every result of the group is on disk under its name (a
 * power loss keeps it), and the coordinator counts a result only then. A crash before that leaves each result
 * either absent (redone on resume) or whole (its data was forced before its rename).
 *
 * <p>Blocking; call it on worker threads. Thread-safe (files are written whole and renamed).
 */
public final class JobOutputs {

  static final String SUFFIX = ".json";
  static final String TEMP_PREFIX = ".tmp-";

  private final Path dir;
  private final FileSync sync;

  public JobOutputs(Path dir, FileSync sync) {
    this.dir = dir;
    this.sync = sync;
  }

  /** One input's result, to be written as part of a group. */
  public record Result(String key, byte[] json) {
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
    writeResults(List.of(new Result(key, json)));
  }

  /**
   * Writes a group of results durably (see the class comment); returns once all are on disk under their names.
   * On an error some may be in place and the rest not; none is half-written.
   */
  public void writeResults(List<Result> results) throws IOException {
    List<Path> temps = new ArrayList<>(results.size());
    try {
      for (Result r : results) {
        Path tmp = dir.resolve(TEMP_PREFIX + r.key() + SUFFIX + "-" + UUID.randomUUID());
        temps.add(tmp);
        write(tmp, r.json());
      }
      sync.forceAll(temps);
      for (int i = 0; i < results.size(); i++) {
        rename(temps.get(i), result(results.get(i).key()));
        Files.deleteIfExists(failed(results.get(i).key()));
      }
      FileSync.forceDir(dir);
    } finally {
      for (Path tmp : temps) {
        Files.deleteIfExists(tmp);
      }
    }
  }

  public void writeFailure(String key, byte[] json) throws IOException {
    atomicWrite(failed(key), json);
  }

  /** The spec and failure records: whole or absent after a crash, forced to disk with their folder. */
  private void atomicWrite(Path target, byte[] bytes) throws IOException {
    Path tmp = target.resolveSibling(TEMP_PREFIX + target.getFileName() + "-" + UUID.randomUUID());
    try {
      write(tmp, bytes);
      FileSync.force(tmp);
      rename(tmp, target);
      FileSync.forceDir(target.getParent());
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static void write(Path tmp, byte[] bytes) throws IOException {
    try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.wrap(bytes);
      while (b.hasRemaining()) {
        ch.write(b);
      }
    }
  }

  private void rename(Path tmp, Path target) throws IOException {
    try {
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      throw new IOException("the output folder " + dir + " cannot rename atomically; results need a filesystem"
          + " that can", e);
    }
  }
}
