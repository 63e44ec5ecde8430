package io.kiln.engines.llm.impl;

/**
 * A decoder runner's counters at one moment, for metrics: gauges (sequences, blocks) and totals since load.
 * Immutable.
 *
 * @param running sequences holding KV blocks (decoding, or prefilling their prompt)
 * @param waiting sequences waiting for admission (new, or preempted)
 * @param kvBlocksUsed blocks referenced by sequences
 * @param kvBlocksTotal blocks of the cache
 * @param kvBlocksCached full blocks the prefix cache holds (referenced or evictable)
 * @param blockSize tokens per block
 * @param prefixCacheHitTokens prompt tokens found in the prefix cache, over all admissions
 * @param prefixCacheLookupTokens tokens looked up in the prefix cache, over all admissions (0 with the cache off):
 *     {@code prefixCacheHitTokens / prefixCacheLookupTokens} is its hit rate
 * @param preemptions sequences preempted to free blocks
 * @param promptTokens prompt tokens of the requests opened
 * @param generationTokens tokens generated
 * @param steps engine steps ({@code next} calls that computed something)
 * @param modelRuns ONNX Runtime session runs
 * @param prefillOnlySteps steps that computed prompts' chunks only (the {@code prefill-first} schedule)
 */
public record DecoderStats(int running, int waiting, int kvBlocksUsed, int kvBlocksTotal, int kvBlocksCached,
                           int blockSize, long prefixCacheHitTokens, long prefixCacheLookupTokens,
                           long preemptions, long promptTokens, long generationTokens, long steps, long modelRuns,
                           long prefillOnlySteps) {

  /** Blocks a sequence could take now: free ones and cached ones no sequence references. */
  public int kvBlocksAvailable() {
    return kvBlocksTotal - kvBlocksUsed;
  }

  /** The share of the cache's blocks that sequences reference, 0 to 1 (0 for a cache of no blocks). */
  public double kvUsageRatio() {
    return kvBlocksTotal == 0 ? 0 : (double) kvBlocksUsed / kvBlocksTotal;
  }
}
