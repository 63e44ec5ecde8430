package io.kiln.engines.llm.impl;

import java.nio.FloatBuffer;
import java.util.List;

/**
 * The KV cache's memory: per layer, one array of keys and one of values, laid out as {@code [block][head][slot][dim]}
 * so that a block's positions of one head are contiguous and move with one bulk copy. Gathers a batch's past into the
 * {@code [batch, head, past, dim]} tensors the model reads and scatters the model's new positions back. Not
 * thread-safe.
 */
final class KvStore {

  private final int layers;
  private final int heads;
  private final int headDim;
  private final int blockSize;
  private final float[][] keys;
  private final float[][] values;

  KvStore(int layers, int heads, int headDim, int blockSize, int blocks) {
    this.layers = layers;
    this.heads = heads;
    this.headDim = headDim;
    this.blockSize = blockSize;
    long perLayer = (long) blocks * heads * blockSize * headDim;
    if (perLayer > Integer.MAX_VALUE - 16) {
      throw new IllegalArgumentException("a KV cache of " + blocks * (long) blockSize + " tokens needs " + perLayer
          + " floats per layer, more than one Java array holds; lower kv_cache_tokens");
    }
    this.keys = new float[layers][(int) perLayer];
    this.values = new float[layers][(int) perLayer];
  }

  /** Bytes the cache holds. */
  long bytes() {
    return 2L * layers * keys[0].length * Float.BYTES;
  }

  /**
   * Copies the first {@code past[b]} positions of row {@code b}'s blocks into {@code out} as
   * {@code [rows, heads, pastLen, headDim]} (positions past a row's own length are left as they are: the attention
   * mask hides them).
   */
  void gather(int layer, boolean key, List<List<Integer>> blockTables, int[] past, int pastLen, FloatBuffer out) {
    float[] src = key ? keys[layer] : values[layer];
    for (int b = 0; b < past.length; b++) {
      List<Integer> table = blockTables.get(b);
      for (int p = 0; p < past[b]; ) {
        int block = table.get(p / blockSize);
        int slot = p % blockSize;
        int run = Math.min(blockSize - slot, past[b] - p);
        for (int h = 0; h < heads; h++) {
          int from = ((block * heads + h) * blockSize + slot) * headDim;
          int to = ((b * heads + h) * pastLen + p) * headDim;
          out.put(to, src, from, run * headDim);
        }
        p += run;
      }
    }
  }

  /**
   * Copies row {@code b}'s new positions of a {@code [rows, heads, totalLen, headDim]} present tensor (they start at
   * {@code pastLen}) into its blocks at positions {@code start[b]} onwards.
   */
  void scatter(int layer, boolean key, List<List<Integer>> blockTables, int[] start, int[] count, int pastLen,
               int totalLen, FloatBuffer present) {
    float[] dst = key ? keys[layer] : values[layer];
    for (int b = 0; b < start.length; b++) {
      List<Integer> table = blockTables.get(b);
      for (int j = 0; j < count[b]; ) {
        int pos = start[b] + j;
        int block = table.get(pos / blockSize);
        int slot = pos % blockSize;
        int run = Math.min(blockSize - slot, count[b] - j);
        for (int h = 0; h < heads; h++) {
          int from = ((b * heads + h) * totalLen + pastLen + j) * headDim;
          int to = ((block * heads + h) * blockSize + slot) * headDim;
          present.get(from, dst, to, run * headDim);
        }
        j += run;
      }
    }
  }
}
