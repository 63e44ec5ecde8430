package io.kiln.pipelines;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Inputs fetched into one node's {@link NodeCache} together ({@link NodeCache#download}). Creating the group
 * copies each input the cache lacks to a temporary file, keeping a small one's bytes in memory so it can be
 * analysed at once; {@link #commit} forces all of them to disk together (about one journal commit for the
 * group instead of one per input) and renames each into place with its metadata, as {@link NodeCache#fetch}
 * does one. A cache entry is thus only ever visible once its data is on disk. Each input succeeds or fails
 * alone. Until the commit, fetches of the same URIs elsewhere on the node wait for this group (and this group
 * waits, at its commit, for downloads of its URIs that others had started: never in a ring, since a group only
 * waits after its own are in place).
 *
 * <p>Blocking. Not thread-safe: one thread creates, commits and closes it. Close it (it commits if that was not
 * done) so that no waiter is left hanging.
 */
public final class CacheGroup implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(CacheGroup.class);

  /**
   * One input of the group.
   *
   * @param entry its cache entry: known at once when it was cached before, else after the commit
   * @param data its bytes, when downloaded by this group and small enough to keep; else null
   * @param error why it could not be fetched; null if it could (so far)
   */
  public record Item(String uri, CacheEntry entry, byte[] data, IOException error) {
  }

  private final NodeCache cache;
  private final Item[] items;
  private final String[] keys;
  private final Path[] temps;
  private final io.kiln.pipelines.impl.Sources.Copied[] copied;
  private final List<CompletableFuture<CacheEntry>> mine;
  private final List<CompletableFuture<CacheEntry>> theirs;
  private boolean committed;

  CacheGroup(NodeCache cache, List<String> uris, long maxBytes, int keep) {
    this.cache = cache;
    int n = uris.size();
    items = new Item[n];
    keys = new String[n];
    temps = new Path[n];
    copied = new io.kiln.pipelines.impl.Sources.Copied[n];
    mine = new ArrayList<>(java.util.Collections.nCopies(n, null));
    theirs = new ArrayList<>(java.util.Collections.nCopies(n, null));
    try {
      for (int i = 0; i < n; i++) {
        start(i, uris.get(i), maxBytes, keep);
      }
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
  }

  private void start(int i, String uri, long maxBytes, int keep) {
    String key = NodeCache.keyOf(uri);
    keys[i] = key;
    CacheEntry hit = cache.get(key).orElse(null);
    if (hit != null) {
      items[i] = new Item(uri, hit, null, null);
      return;
    }
    CompletableFuture<CacheEntry> f = new CompletableFuture<>();
    CompletableFuture<CacheEntry> running = cache.claim(key, f);
    if (running != null) {
      theirs.set(i, running); // this group's own duplicates of a URI land here too
      items[i] = new Item(uri, null, null, null);
      return;
    }
    mine.set(i, f);
    hit = cache.get(key).orElse(null); // another download may have finished in between
    if (hit != null) {
      done(i, hit);
      items[i] = new Item(uri, hit, null, null);
      return;
    }
    Path tmp = cache.tmpFile(key);
    try {
      copied[i] = cache.sources().copy(uri, maxBytes, tmp, false, keep);
      temps[i] = tmp;
      items[i] = new Item(uri, null, copied[i].data(), null);
    } catch (IOException | RuntimeException e) {
      deleteQuietly(tmp);
      items[i] = new Item(uri, null, null, fail(i, e));
    }
  }

  public int size() {
    return items.length;
  }

  /** Input {@code i} as downloaded: its bytes if kept, or its entry if cached before, or its error. */
  public Item item(int i) {
    return items[i];
  }

  /**
   * Forces this group's downloads to disk together, puts them in the cache, and waits for the downloads of its
   * URIs that others were running; answers every input's final state (an entry, or an error). Idempotent.
   */
  public List<Item> commit() {
    if (committed) {
      return List.of(items);
    }
    committed = true;
    List<Integer> downloaded = new ArrayList<>();
    for (int i = 0; i < items.length; i++) {
      if (temps[i] != null) {
        downloaded.add(i);
      }
    }
    try {
      cache.sync().forceAll(downloaded.stream().map(i -> temps[i]).toList());
    } catch (IOException e) {
      for (int i : downloaded) {
        items[i] = new Item(items[i].uri(), null, null, fail(i, e));
      }
      downloaded.clear();
    }
    for (int i : downloaded) {
      try {
        CacheEntry e = cache.install(items[i].uri(), keys[i], temps[i], copied[i]);
        done(i, e);
        items[i] = new Item(items[i].uri(), e, items[i].data(), null);
      } catch (IOException | RuntimeException e) {
        items[i] = new Item(items[i].uri(), null, null, fail(i, e));
      } finally {
        deleteQuietly(temps[i]);
        temps[i] = null;
      }
    }
    for (int i = 0; i < items.length; i++) {
      CompletableFuture<CacheEntry> running = theirs.get(i);
      if (running != null) {
        try {
          items[i] = new Item(items[i].uri(), NodeCache.awaitDownload(running, items[i].uri()), null, null);
        } catch (IOException e) {
          items[i] = new Item(items[i].uri(), null, null, e);
        }
      }
    }
    return List.of(items);
  }

  /** Commits if that was not done; in any case no download of this group is left claimed or on disk. */
  @Override
  public void close() {
    try {
      if (!committed) {
        commit();
      }
    } finally {
      for (int i = 0; i < items.length; i++) {
        CompletableFuture<CacheEntry> f = mine.get(i);
        if (f != null && !f.isDone()) {
          fail(i, new IOException("the group fetch on node " + cache.nodeId() + " was abandoned"));
        }
        if (temps[i] != null) {
          deleteQuietly(temps[i]);
          temps[i] = null;
        }
      }
    }
  }

  private void done(int i, CacheEntry e) {
    CompletableFuture<CacheEntry> f = mine.get(i);
    f.complete(e);
    cache.unclaim(keys[i], f);
  }

  private IOException fail(int i, Exception e) {
    IOException io = e instanceof IOException x ? x : new IOException(e.getMessage(), e);
    CompletableFuture<CacheEntry> f = mine.get(i);
    if (f != null) {
      f.completeExceptionally(io);
      cache.unclaim(keys[i], f);
    }
    return io;
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      LOG.debug("could not remove {}", p, e); // the next start clears the temporary folder
    }
  }
}
