package io.kiln.engines.llm.impl;

import java.util.Arrays;

/**
 * What a full KV block holds: its tokens and, through its parent, every token before them (the prefix cache's
 * key). Equality is exact (no hash collisions can share a wrong block); a sequence that matched a cached chain
 * takes the cache's own keys as parents, so comparing parents is usually one reference check.
 */
final class BlockKey {

  private final BlockKey parent;
  private final int[] tokens;
  private final int hash;

  BlockKey(BlockKey parent, int[] tokens) {
    this.parent = parent;
    this.tokens = tokens;
    this.hash = 31 * (parent == null ? 17 : parent.hash) + Arrays.hashCode(tokens);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof BlockKey k) || k.hash != hash || !Arrays.equals(k.tokens, tokens)) {
      return false;
    }
    return parent == k.parent || parent != null && parent.equals(k.parent);
  }

  @Override
  public int hashCode() {
    return hash;
  }
}
