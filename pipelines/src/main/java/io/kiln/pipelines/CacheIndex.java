package io.kiln.pipelines;

import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.SharedStore;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster-wide index of node caches: which nodes hold which cache key, in the shared map
 * {@value #MAP} (one entry {@code <key>@<node>} per copy, written only by the node holding it, so no two
 * nodes ever write one entry). Each node mirrors the map in memory, so {@link #nodeFor} answers at once:
 * the gateway's {@code data_key} routing calls it on its event loop.
 *
 * <p>Copies on nodes that left the cluster are never answered; the leader also removes their entries.
 * The mirror is eventually consistent: a copy cached a moment ago may not be known yet, and then routing
 * simply ignores locality.
 *
 * <p><b>Threading:</b> thread-safe; nothing blocks.
 */
public final class CacheIndex implements NodeCache.Listener, AutoCloseable {

  /** The shared map's name. */
  public static final String MAP = "kiln.cache-index";

  private static final Logger LOG = LoggerFactory.getLogger(CacheIndex.class);

  private final KilnRuntime runtime;
  private final SharedStore<CacheEntry> map;
  private final ConcurrentHashMap<String, Set<String>> nodesByKey = new ConcurrentHashMap<>();
  private volatile String listenerId;

  public CacheIndex(KilnRuntime runtime) {
    this.runtime = runtime;
    this.map = runtime.store(MAP, CacheEntry.class);
  }

  /** Starts mirroring the shared map. */
  public CompletionStage<Void> start() {
    // Only presence matters here: an entry counts even if its value does not read.
    listenerId = map.addListener((entryKey, entry) -> changed(entryKey, entry != null));
    return map.entries().thenAccept(entries -> entries.keySet().forEach(entryKey -> changed(entryKey, true)));
  }

  /** Publishes every entry of this node's cache (after a start, when the cache adopted files on disk). */
  public CompletionStage<Void> publishAll(NodeCache cache) {
    return Futures.allOf(cache.entries().stream().map(this::put).toList());
  }

  @Override
  public void added(CacheEntry entry) {
    put(entry).whenComplete((v, e) -> {
      if (e != null) {
        LOG.debug("could not index {}", entry.key(), e);
      }
    });
  }

  @Override
  public void removed(String key) {
    map.remove(key + "@" + runtime.nodeId());
  }

  private CompletionStage<Void> put(CacheEntry e) {
    changed(e.key() + "@" + e.nodeId(), true); // known locally at once
    return map.put(e.key() + "@" + e.nodeId(), e);
  }

  private void changed(String entryKey, boolean present) {
    int at = entryKey.lastIndexOf('@');
    if (at <= 0) {
      return;
    }
    String key = entryKey.substring(0, at);
    String node = entryKey.substring(at + 1);
    if (!present) {
      nodesByKey.computeIfPresent(key, (k, nodes) -> {
        Set<String> left = new TreeSet<>(nodes);
        left.remove(node);
        return left.isEmpty() ? null : Set.copyOf(left);
      });
    } else {
      nodesByKey.compute(key, (k, nodes) -> {
        Set<String> more = nodes == null ? new TreeSet<>() : new TreeSet<>(nodes);
        more.add(node);
        return Set.copyOf(more);
      });
    }
  }

  /** Live nodes holding {@code key}, sorted. */
  public List<String> nodesFor(String key) {
    Set<String> nodes = nodesByKey.getOrDefault(key, Set.of());
    List<String> members = runtime.members();
    return nodes.stream().filter(members::contains).sorted().toList();
  }

  /**
   * A live node holding the data named by {@code dataKey}: a cache key, or a URI (looked up by its key).
   * Empty when none is known. Suits {@code io.kiln.gateway.spi.DataLocator}.
   */
  public Optional<String> nodeFor(String dataKey) {
    if (dataKey == null || dataKey.isEmpty()) {
      return Optional.empty();
    }
    String key = NodeCache.isKey(dataKey) ? dataKey : NodeCache.keyOf(dataKey);
    List<String> nodes = nodesFor(key);
    if (nodes.isEmpty()) {
      return Optional.empty();
    }
    if (nodes.contains(runtime.nodeId())) {
      return Optional.of(runtime.nodeId());
    }
    return Optional.of(nodes.get(0));
  }

  /** Every key with the live nodes holding it. */
  public Map<String, List<String>> snapshot() {
    Map<String, List<String>> out = new java.util.TreeMap<>();
    nodesByKey.keySet().forEach(k -> {
      List<String> nodes = nodesFor(k);
      if (!nodes.isEmpty()) {
        out.put(k, nodes);
      }
    });
    return out;
  }

  /**
   * After a member joined (a partition healed): puts back every entry of this node's cache and drops this node's
   * entries that its cache no longer holds. On the smaller side of a partition split-brain protection refused the
   * index writes of copies made or evicted there, and the merge brings back only the entries of the partitions the
   * smaller side held; this makes the index say again what this node's disk holds.
   */
  public CompletionStage<Void> republish(NodeCache cache) {
    Set<String> held = new java.util.HashSet<>();
    cache.entries().forEach(e -> held.add(e.key() + "@" + e.nodeId()));
    String mine = "@" + runtime.nodeId();
    return publishAll(cache).thenCompose(v -> map.entries()).thenCompose(entries -> Futures.allOf(entries.keySet()
        .stream().filter(k -> k.endsWith(mine) && !held.contains(k)).map(map::remove).toList()));
  }

  /** Leader duty: drops the entries of a node that left (its disk is gone from the cluster). */
  public CompletionStage<Void> forgetNode(String nodeId) {
    return map.entries().thenCompose(entries -> {
      return Futures.allOf(entries.keySet().stream().filter(k -> k.endsWith("@" + nodeId)).map(map::remove)
          .toList());
    });
  }

  @Override
  public void close() {
    String id = listenerId;
    if (id != null) {
      map.removeListener(id);
    }
  }
}
