package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BlockPoolTest {

  private static BlockKey key(BlockKey parent, int... tokens) {
    return new BlockKey(parent, tokens);
  }

  @Test
  void releasedCachedBlocksStayEvictableAndAreSharedAgain() {
    BlockPool pool = new BlockPool(3, true);
    int a = pool.allocate();
    BlockKey k = key(null, 1, 2);
    pool.fill(a, k);
    pool.release(a);
    assertThat(pool.available()).isEqualTo(3);
    assertThat(pool.cachedBlocks()).isEqualTo(1);
    assertThat(pool.share(key(null, 1, 2))).isEqualTo(a);
    assertThat(pool.available()).isEqualTo(2);
    assertThat(pool.share(key(key(null, 9, 9), 1, 2))).as("same tokens, other prefix").isEqualTo(-1);
  }

  @Test
  void freeBlocksGoFirstThenTheLeastRecentlyReleasedCachedOne() {
    BlockPool pool = new BlockPool(2, true);
    int a = pool.allocate();
    int b = pool.allocate();
    pool.fill(a, key(null, 1));
    pool.fill(b, key(null, 2));
    pool.release(a);
    pool.release(b);
    assertThat(pool.allocate()).isEqualTo(a); // evicted: a was released first
    assertThat(pool.share(key(null, 1))).isEqualTo(-1);
    assertThat(pool.share(key(null, 2))).isEqualTo(b);
  }

  @Test
  void withoutThePrefixCacheNothingIsKept() {
    BlockPool pool = new BlockPool(2, false);
    int a = pool.allocate();
    pool.fill(a, key(null, 1));
    pool.release(a);
    assertThat(pool.cachedBlocks()).isZero();
    assertThat(pool.share(key(null, 1))).isEqualTo(-1);
    assertThatThrownBy(() -> pool.release(a)).isInstanceOf(IllegalStateException.class);
  }
}
