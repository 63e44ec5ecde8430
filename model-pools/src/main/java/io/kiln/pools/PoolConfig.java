package io.kiln.pools;

import java.time.Duration;
import java.util.Objects;

/**
 * How one pool (a deployment version on one node) queues and batches requests. Immutable; every value
 * is validated on construction, so a {@code PoolConfig} that exists is usable.
 *
 * <pre>{@code PoolConfig.builder().maxBatchSize(16).maxBatchDelay(Duration.ofMillis(5)).build()}</pre>
 *
 * @param maxBatchSize most rows (first dimension of the inputs, summed over the requests) in one batch;
 *     at least 1. A single request with more rows than this is dispatched alone, never split.
 * @param maxBatchDelay longest time the oldest queued request waits for a fuller batch while a worker is
 *     idle; zero dispatches at once. At most {@link #MAX_BATCH_DELAY}.
 * @param maxQueued most requests waiting for a worker (not counting those being executed); at least 1.
 *     A submit beyond it is refused at once with {@link CapacityExceededException}.
 * @param defaultTimeout deadline given to a request whose client set none; positive, at most
 *     {@link #MAX_TIMEOUT}
 * @param maxRequeues how many times a request whose worker failed under it is queued again before it
 *     fails; at least 0
 */
public record PoolConfig(int maxBatchSize, Duration maxBatchDelay, int maxQueued, Duration defaultTimeout,
                         int maxRequeues) {

  public static final int DEFAULT_MAX_BATCH_SIZE = 8;
  public static final Duration DEFAULT_MAX_BATCH_DELAY = Duration.ofMillis(2);
  public static final int DEFAULT_MAX_QUEUED = 512;
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
  public static final int DEFAULT_MAX_REQUEUES = 1;

  /** A batch delay beyond this trades so much latency for throughput that it is surely a typo. */
  public static final Duration MAX_BATCH_DELAY = Duration.ofMinutes(1);
  /** Upper bound on {@code defaultTimeout}; keeps deadline arithmetic far from overflow. */
  public static final Duration MAX_TIMEOUT = Duration.ofDays(1);

  public static final PoolConfig DEFAULTS = builder().build();

  /** @throws IllegalArgumentException naming the first invalid value */
  public PoolConfig {
    checkBatchSize(maxBatchSize);
    checkBatchDelay(maxBatchDelay);
    checkMaxQueued(maxQueued);
    checkTimeout(defaultTimeout);
    checkRequeues(maxRequeues);
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder().maxBatchSize(maxBatchSize).maxBatchDelay(maxBatchDelay).maxQueued(maxQueued)
        .defaultTimeout(defaultTimeout).maxRequeues(maxRequeues);
  }

  /** Builds a {@link PoolConfig}; each setter rejects an invalid value at once. Not thread-safe. */
  public static final class Builder {
    private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    private Duration maxBatchDelay = DEFAULT_MAX_BATCH_DELAY;
    private int maxQueued = DEFAULT_MAX_QUEUED;
    private Duration defaultTimeout = DEFAULT_TIMEOUT;
    private int maxRequeues = DEFAULT_MAX_REQUEUES;

    private Builder() {
    }

    public Builder maxBatchSize(int rows) {
      this.maxBatchSize = checkBatchSize(rows);
      return this;
    }

    public Builder maxBatchDelay(Duration delay) {
      this.maxBatchDelay = checkBatchDelay(delay);
      return this;
    }

    public Builder maxQueued(int requests) {
      this.maxQueued = checkMaxQueued(requests);
      return this;
    }

    public Builder defaultTimeout(Duration timeout) {
      this.defaultTimeout = checkTimeout(timeout);
      return this;
    }

    public Builder maxRequeues(int requeues) {
      this.maxRequeues = checkRequeues(requeues);
      return this;
    }

    public PoolConfig build() {
      return new PoolConfig(maxBatchSize, maxBatchDelay, maxQueued, defaultTimeout, maxRequeues);
    }
  }

  private static int checkBatchSize(int rows) {
    if (rows < 1) {
      throw new IllegalArgumentException("maxBatchSize must be >= 1, got " + rows);
    }
    return rows;
  }

  private static Duration checkBatchDelay(Duration delay) {
    Objects.requireNonNull(delay, "maxBatchDelay");
    if (delay.isNegative() || delay.compareTo(MAX_BATCH_DELAY) > 0) {
      throw new IllegalArgumentException("maxBatchDelay must be between 0 and " + MAX_BATCH_DELAY + ", got " + delay);
    }
    return delay;
  }

  private static int checkMaxQueued(int requests) {
    if (requests < 1) {
      throw new IllegalArgumentException("maxQueued must be >= 1, got " + requests);
    }
    return requests;
  }

  private static Duration checkTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "defaultTimeout");
    if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_TIMEOUT) > 0) {
      throw new IllegalArgumentException("defaultTimeout must be > 0 and <= " + MAX_TIMEOUT + ", got " + timeout);
    }
    return timeout;
  }

  private static int checkRequeues(int requeues) {
    if (requeues < 0) {
      throw new IllegalArgumentException("maxRequeues must be >= 0, got " + requeues);
    }
    return requeues;
  }
}
