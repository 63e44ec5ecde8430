package io.kiln.pipelines;

import io.kiln.runtime.WireCodec;
import io.kiln.pipelines.impl.Sources;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node's cache of fetched inputs: a folder on its local disk, keyed by the SHA-256 of the URI, with a
 * size cap and least-recently-used eviction. Fetch steps write it; infer steps read it on the same node, so
 * large inputs never cross the network.
 *
 * <ul>
 *   <li><b>Atomic writes.</b> An input is downloaded to a temporary file, forced to disk, then renamed into
 *       place (its metadata file likewise, before it): a reader sees a whole file or none, and a crash
 *       leaves only temporary files, removed at the next start. That makes a fetch idempotent, so retrying
 *       it is safe.</li>
 *   <li><b>One download per key.</b> Concurrent fetches of one URI on one node share a single download.</li>
 *   <li><b>Eviction never removes a file in use:</b> {@link #open} pins an entry until its lease closes.</li>
 * </ul>
 *
 * <p><b>Threading:</b> thread-safe. {@link #fetch} and the constructor block on disk and network: call them
 * from worker threads (steps run on the runtime's task threads). {@link #get}, {@link #entries} and
 * {@link #usedBytes} answer from memory. Listeners are called on the thread that changed the cache and
 * must not block.
 */
public final class NodeCache {

  private static final Logger LOG = LoggerFactory.getLogger(NodeCache.class);
  private static final String META_SUFFIX = ".json";
  private static final String TMP = "tmp";

  /**
   * @param dir this node's cache folder (created if absent)
   * @param maxBytes the cap on cached bytes
   * @param fileRoots folders {@code file://} inputs must lie under; empty refuses every file URI
   * @param httpTimeout connect and request timeout of {@code http(s)://} fetches
   */
  public record Options(Path dir, long maxBytes, List<Path> fileRoots, Duration httpTimeout) {

    public static final long DEFAULT_MAX_BYTES = 10L << 30;
    public static final Duration DEFAULT_HTTP_TIMEOUT = Duration.ofMinutes(5);

    public Options {
      Objects.requireNonNull(dir, "dir");
      fileRoots = List.copyOf(fileRoots);
      Objects.requireNonNull(httpTimeout, "httpTimeout");
      if (maxBytes < 1) {
        throw new IllegalArgumentException("cache maxBytes must be positive, got " + maxBytes);
      }
    }

    public static Options of(Path dir, long maxBytes, List<Path> fileRoots) {
      return new Options(dir, maxBytes, fileRoots, DEFAULT_HTTP_TIMEOUT);
    }
  }

  /** Told when entries appear and go (to keep the cluster-wide {@link CacheIndex} current). */
  public interface Listener {
    void added(CacheEntry entry);

    void removed(String key);
  }

  /** A pinned entry: not evicted until closed. Close it exactly once. */
  public final class Lease implements AutoCloseable {
    private final CacheEntry entry;
    private boolean closed;

    private Lease(CacheEntry entry) {
      this.entry = entry;
    }

    public CacheEntry entry() {
      return entry;
    }

    public Path path() {
      return Path.of(entry.path());
    }

    @Override
    public void close() {
      synchronized (lock) {
        if (!closed) {
          closed = true;
          pins.computeIfPresent(entry.key(), (k, n) -> n <= 1 ? null : n - 1);
        }
      }
    }
  }

  private final String nodeId;
  private final Options options;
  private final LongSupplier clockMillis;
  private final Sources sources;
  private final Path tmpDir;
  private final io.kiln.pipelines.impl.FileSync sync;
  private final Object lock = new Object();
  /** Access-ordered: the eldest is the least recently used. Guarded by {@link #lock}. */
  private final LinkedHashMap<String, CacheEntry> entries = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<String, Integer> pins = new HashMap<>();
  private final ConcurrentHashMap<String, CompletableFuture<CacheEntry>> downloads = new ConcurrentHashMap<>();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  private long used;

  /**
   * Opens (creating) the cache folder, removes leftovers of interrupted writes and adopts the complete
   * entries already there, evicting down to the cap. Blocking.
   *
   * @throws UncheckedIOException if the folder cannot be created or read
   */
  public NodeCache(String nodeId, Options options, LongSupplier clockMillis) {
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    this.options = options;
    this.clockMillis = clockMillis;
    this.sources = new Sources(options.fileRoots(), options.httpTimeout());
    this.tmpDir = options.dir().resolve(TMP);
    this.sync = new io.kiln.pipelines.impl.FileSync("cache-" + nodeId);
    try {
      Files.createDirectories(tmpDir);
      clearTemporaries();
      adoptExisting();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the cache folder " + options.dir(), e);
    }
  }

  /** The cache key of a URI: lowercase hex SHA-256 of its text as given. */
  public static String keyOf(String uri) {
    return Sources.sha256Hex(uri);
  }

  /** Whether {@code s} has the form of a cache key (64 lowercase hex digits). */
  public static boolean isKey(String s) {
    return s.length() == 64 && s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  }

  public String nodeId() {
    return nodeId;
  }

  public Options options() {
    return options;
  }

  public void addListener(Listener l) {
    listeners.add(l);
  }

  /**
   * The cached copy of {@code uri}, fetching it first if absent. Blocking.
   *
   * @param maxBytes the largest input accepted
   * @throws IOException the source could not be read, was too large, or the cache is full
   *     ({@link CacheFullException})
   */
  public CacheEntry fetch(String uri, long maxBytes) throws IOException {
    String key = keyOf(uri);
    Optional<CacheEntry> hit = get(key);
    if (hit.isPresent()) {
      return hit.get();
    }
    CompletableFuture<CacheEntry> mine = new CompletableFuture<>();
    CompletableFuture<CacheEntry> running = downloads.putIfAbsent(key, mine);
    if (running != null) {
      return await(running, uri);
    }
    try {
      CacheEntry e = get(key).orElse(null); // another download may have finished in between
      if (e == null) {
        e = download(uri, key, maxBytes);
      }
      mine.complete(e);
      return e;
    } catch (IOException | RuntimeException ex) {
      mine.completeExceptionally(ex);
      throw ex;
    } finally {
      downloads.remove(key, mine);
    }
  }

  private static CacheEntry await(CompletableFuture<CacheEntry> running, String uri) throws IOException {
    try {
      return running.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while waiting for the download of " + uri);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof IOException io) {
        throw io;
      }
      throw new IOException(c.getMessage(), c);
    }
  }

  private CacheEntry download(String uri, String key, long maxBytes) throws IOException {
    Path tmp = tmpDir.resolve(key + "." + UUID.randomUUID() + ".part");
    try {
      return install(uri, key, tmp, sources.copy(uri, maxBytes, tmp));
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * Starts fetching {@code uris} into this cache as one group: each absent one is copied to a temporary file
   * now (its bytes kept in memory when at most {@code keep}); {@link CacheGroup#commit} then forces them all to
   * disk together and puts them in place. Blocking (the downloads).
   */
  public CacheGroup download(List<String> uris, long maxBytes, int keep) {
    return new CacheGroup(this, uris, maxBytes, keep);
  }

  // ---- for CacheGroup ---------------------------------------------------------------------------------

  /** Claims {@code key}'s download: null if claimed, else the download already running. */
  CompletableFuture<CacheEntry> claim(String key, CompletableFuture<CacheEntry> mine) {
    return downloads.putIfAbsent(key, mine);
  }

  void unclaim(String key, CompletableFuture<CacheEntry> mine) {
    downloads.remove(key, mine);
  }

  Path tmpFile(String key) {
    return tmpDir.resolve(key + "." + UUID.randomUUID() + ".part");
  }

  Sources sources() {
    return sources;
  }

  io.kiln.pipelines.impl.FileSync sync() {
    return sync;
  }

  static CacheEntry awaitDownload(CompletableFuture<CacheEntry> running, String uri) throws IOException {
    return await(running, uri);
  }

  /** Puts a downloaded (and forced) temporary file in place as {@code key}'s entry and tells the listeners. */
  CacheEntry install(String uri, String key, Path tmp, Sources.Copied copied) throws IOException {
    Path tmpMeta = tmpDir.resolve(key + "." + UUID.randomUUID() + ".meta");
    try {
      Path data = options.dir().resolve(key);
      CacheEntry entry = new CacheEntry(key, uri, nodeId, data.toString(), copied.bytes(), copied.sha256(),
          clockMillis.getAsLong());
      List<String> evicted = new ArrayList<>();
      try {
        synchronized (lock) {
          makeRoom(copied.bytes(), uri, evicted);
          Files.writeString(tmpMeta, WireCodec.toJson(entry));
          // Metadata first: a data file is only ever visible with its metadata beside it.
          move(tmpMeta, options.dir().resolve(key + META_SUFFIX));
          move(tmp, data);
          entries.put(key, entry);
          used += entry.bytes();
        }
      } finally {
        evicted.forEach(this::fireRemoved);
      }
      listeners.forEach(l -> l.added(entry));
      LOG.debug("cached {} ({} bytes) as {} on {}", uri, copied.bytes(), key, nodeId);
      return entry;
    } finally {
      Files.deleteIfExists(tmpMeta);
    }
  }

  /** Evicts least recently used, unpinned entries until {@code bytes} more fit. Holds {@link #lock}. */
  private void makeRoom(long bytes, String uri, List<String> evicted) throws IOException {
    if (bytes > options.maxBytes()) {
      throw new CacheFullException(uri + " is " + bytes + " bytes, more than the whole cache of node " + nodeId
          + " (" + options.maxBytes() + " bytes)");
    }
    // Walks the LRU order only when something must go: a copy of every entry per fetch made caching N inputs
    // O(N²) under the lock (a job over 10,000 small inputs spent half its CPU here).
    for (var it = entries.values().iterator(); used + bytes > options.maxBytes() && it.hasNext(); ) {
      CacheEntry victim = it.next();
      if (pins.containsKey(victim.key())) {
        continue;
      }
      deleteFiles(victim.key());
      it.remove();
      used -= victim.bytes();
      evicted.add(victim.key());
    }
    if (used + bytes > options.maxBytes()) {
      throw new CacheFullException("the cache of node " + nodeId + " is full: " + used + " of "
          + options.maxBytes() + " bytes are in use by running steps; " + uri + " needs " + bytes);
    }
  }

  /** The entry for {@code key}, marking it recently used; empty if absent. */
  public Optional<CacheEntry> get(String key) {
    synchronized (lock) {
      return Optional.ofNullable(entries.get(key));
    }
  }

  /**
   * Pins the entry for {@code key} while the lease is open.
   *
   * @throws NoSuchFileException if it is not cached here
   */
  public Lease open(String key) throws NoSuchFileException {
    synchronized (lock) {
      CacheEntry e = entries.get(key);
      if (e == null) {
        throw new NoSuchFileException("input " + key + " is not in the cache of node " + nodeId);
      }
      pins.merge(key, 1, Integer::sum);
      return new Lease(e);
    }
  }

  /** Removes an entry unless it is in use; returns whether it was removed. */
  public boolean remove(String key) throws IOException {
    synchronized (lock) {
      if (!entries.containsKey(key) || pins.containsKey(key)) { // containsKey: not a use, unlike get
        return false;
      }
      deleteFiles(key);
      used -= entries.remove(key).bytes();
    }
    fireRemoved(key);
    return true;
  }

  /** Every entry, least recently used first. */
  public List<CacheEntry> entries() {
    synchronized (lock) {
      return List.copyOf(entries.values());
    }
  }

  public long usedBytes() {
    synchronized (lock) {
      return used;
    }
  }

  private void fireRemoved(String key) {
    listeners.forEach(l -> l.removed(key));
  }

  private void deleteFiles(String key) throws IOException {
    Files.deleteIfExists(options.dir().resolve(key));
    Files.deleteIfExists(options.dir().resolve(key + META_SUFFIX));
  }

  private static void move(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      throw new IOException("the cache folder's file system cannot rename atomically (" + to.getParent() + ")", e);
    }
  }

  private void clearTemporaries() throws IOException {
    try (DirectoryStream<Path> s = Files.newDirectoryStream(tmpDir)) {
      for (Path p : s) {
        Files.deleteIfExists(p);
      }
    }
  }

  private void adoptExisting() throws IOException {
    List<CacheEntry> found = new ArrayList<>();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(options.dir())) {
      for (Path p : s) {
        String name = p.getFileName().toString();
        if (name.equals(TMP)) {
          continue;
        }
        String key = name.endsWith(META_SUFFIX) ? name.substring(0, name.length() - META_SUFFIX.length()) : name;
        Path data = options.dir().resolve(key);
        Path meta = options.dir().resolve(key + META_SUFFIX);
        if (!isKey(key) || !Files.exists(meta) || !Files.exists(data)) {
          Files.deleteIfExists(p); // half of an interrupted write or eviction, or a stranger
          continue;
        }
        if (name.endsWith(META_SUFFIX)) {
          readEntry(key, meta, data).ifPresent(found::add);
        }
      }
    }
    found.sort(Comparator.comparingLong(CacheEntry::fetchedAtMs));
    synchronized (lock) {
      for (CacheEntry e : found) {
        entries.put(e.key(), e);
        used += e.bytes();
      }
      List<String> evicted = new ArrayList<>();
      if (used > options.maxBytes()) {
        makeRoom(0, "(adopted entries)", evicted);
      }
      if (!evicted.isEmpty()) {
        LOG.info("cache of node {}: evicted {} adopted entries over the cap", nodeId, evicted.size());
      }
    }
  }

  private Optional<CacheEntry> readEntry(String key, Path meta, Path data) throws IOException {
    try {
      CacheEntry e = WireCodec.fromJson(Files.readString(meta), CacheEntry.class);
      if (e.key().equals(key) && Files.size(data) == e.bytes()) {
        return Optional.of(new CacheEntry(key, e.uri(), nodeId, data.toString(), e.bytes(), e.sha256(),
            e.fetchedAtMs()));
      }
    } catch (UncheckedIOException | IllegalArgumentException | NullPointerException ex) {
      LOG.debug("dropping unreadable cache metadata {}", meta, ex);
    }
    deleteFiles(key);
    return Optional.empty();
  }
}
