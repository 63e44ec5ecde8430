package io.kiln.pools;

import java.time.Duration;
import java.util.Objects;

/**
 * Dynamic batching of a pool: when a worker is idle, its manager takes up to {@code maxBatchSize} queued
 * requests, waiting at most {@code maxBatchDelay} for a fuller batch. The defaults do not batch, because
 * batching trades latency for throughput and needs a model whose first dimension is the batch.
 *
 * @param maxBatchSize largest batch, at least 1 (and at most the queue's {@code max_queued})
 * @param maxBatchDelay longest wait for a fuller batch, not negative
 */
public record BatchingSpec(int maxBatchSize, Duration maxBatchDelay) {

  public static final int DEFAULT_MAX_BATCH_SIZE = 1;
  public static final Duration DEFAULT_MAX_BATCH_DELAY = Duration.ZERO;
  public static final int MAX_BATCH_SIZE = 65_536;
  public static final BatchingSpec DEFAULT = new BatchingSpec(DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_BATCH_DELAY);

  public BatchingSpec {
    Objects.requireNonNull(maxBatchDelay, "maxBatchDelay");
    SpecRules.require("max_batch_size", SpecRules.atLeast(maxBatchSize, 1));
    SpecRules.require("max_batch_size", SpecRules.atMost(maxBatchSize, MAX_BATCH_SIZE));
    SpecRules.require("max_batch_delay_ms", SpecRules.notNegative(maxBatchDelay));
  }
}
