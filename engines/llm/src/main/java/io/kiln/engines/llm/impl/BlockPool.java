package io.kiln.engines.llm.impl;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * The KV cache's blocks as a ledger: which are free, which are referenced by sequences (and how many times, as
 * sequences sharing a prefix share its blocks), and which full blocks the prefix cache keeps after their sequences
 * left. A kept block with no reference is evictable: it counts as available and is taken, least recently released
 * first, when the free list is empty. Not thread-safe.
 */
final class BlockPool {

  private final int total;
  private final boolean prefixCache;
  private final int[] refs;
  private final BlockKey[] keyOf;
  private final int[] free;
  private int freeCount;
  private final Map<BlockKey, Integer> cached = new HashMap<>();
  private final LinkedHashSet<Integer> evictable = new LinkedHashSet<>();

  BlockPool(int total, boolean prefixCache) {
    this.total = total;
    this.prefixCache = prefixCache;
    this.refs = new int[total];
    this.keyOf = new BlockKey[total];
    this.free = new int[total];
    for (int i = 0; i < total; i++) {
      free[i] = total - 1 - i; // block 0 is taken first
    }
    this.freeCount = total;
  }

  int total() {
    return total;
  }

  /** Blocks a sequence could get now: free ones and cached ones no sequence references. */
  int available() {
    return freeCount + evictable.size();
  }

  /** Blocks referenced by at least one sequence. */
  int used() {
    return total - available();
  }

  /** Full blocks the prefix cache holds (referenced or not). */
  int cachedBlocks() {
    return cached.size();
  }

  /** A block for one sequence; call only when {@link #available()} is positive. */
  int allocate() {
    int b;
    if (freeCount > 0) {
      b = free[--freeCount];
    } else {
      Iterator<Integer> lru = evictable.iterator();
      b = lru.next();
      lru.remove();
      cached.remove(keyOf[b]);
      keyOf[b] = null;
    }
    refs[b] = 1;
    return b;
  }

  /** The cached block holding {@code key}, now referenced once more; -1 if none. */
  int share(BlockKey key) {
    if (!prefixCache) {
      return -1;
    }
    Integer b = cached.get(key);
    if (b == null) {
      return -1;
    }
    if (refs[b]++ == 0) {
      evictable.remove(b);
    }
    return b;
  }

  /** The key the cache holds for {@code b}'s content; null when {@code b} is not cached. */
  BlockKey keyOf(int b) {
    return keyOf[b];
  }

  /**
   * Records that {@code b}, now full, holds {@code key}. When another block already holds it (two sequences filled
   * the same prefix at once) the cache keeps that one and {@code b} stays private.
   */
  void fill(int b, BlockKey key) {
    if (prefixCache && keyOf[b] == null && !cached.containsKey(key)) {
      cached.put(key, b);
      keyOf[b] = key;
    }
  }

  /** Drops one reference to {@code b}; with none left it becomes evictable (cached) or free. */
  void release(int b) {
    if (refs[b] <= 0) {
      throw new IllegalStateException("KV block " + b + " released more often than taken");
    }
    if (--refs[b] == 0) {
      if (keyOf[b] != null) {
        evictable.add(b);
      } else {
        free[freeCount++] = b;
      }
    }
  }
}
