package io.kiln.pools;

import io.kiln.runtime.RetryPolicy;
import java.time.Duration;
import java.util.Objects;

/**
 * How one pool (a deployment version on one node) queues and batches requests: the deployment's
 * {@link BatchingSpec} and {@link QueueSpec} as they are, plus the pool's own re-queue budget. Immutable;
 * every value is validated on construction, so a {@code PoolConfig} that exists is usable.
 *
 * <pre>{@code PoolConfig.builder().maxBatchSize(16).maxBatchDelay(Duration.ofMillis(5)).build()}</pre>
 *
 * @param batching dynamic batching: {@code maxBatchSize} is the most rows (first dimension of the inputs,
 *     summed over the requests) in one batch; a single request with more rows is dispatched alone, never
 *     split. {@code maxBatchDelay} is the longest time the oldest queued request waits for a fuller batch
 *     while a worker is idle; zero dispatches at once.
 * @param queue {@code maxQueued} requests waiting for a worker (not counting those being executed); a
 *     submit beyond it is refused at once with {@link CapacityExceededException}. {@code timeout} is the
 *     deadline given to a request whose client set none.
 * @param maxRequeues how many times a request whose worker failed under it is queued again before it
 *     fails; at least 0
 */
public record PoolConfig(BatchingSpec batching, QueueSpec queue, int maxRequeues) {

  /** Defaults of a pool built in code (a deployment's come from its YAML, see {@link BatchingSpec#DEFAULT}). */
  public static final int DEFAULT_MAX_BATCH_SIZE = 8;
  public static final Duration DEFAULT_MAX_BATCH_DELAY = Duration.ofMillis(2);
  public static final int DEFAULT_MAX_QUEUED = QueueSpec.DEFAULT_MAX_QUEUED;
  public static final Duration DEFAULT_TIMEOUT = QueueSpec.DEFAULT_TIMEOUT;
  /** {@link RetryPolicy#WORKER_REQUEUE}'s: a request is queued again once after its worker failed. */
  public static final int DEFAULT_MAX_REQUEUES = RetryPolicy.WORKER_REQUEUE.maxRetries();

  /** Upper bound on a request's timeout; keeps deadline arithmetic far from overflow. */
  public static final Duration MAX_TIMEOUT = SpecRules.MAX_DURATION;

  public static final PoolConfig DEFAULTS = builder().build();

  /** @throws IllegalArgumentException naming the first invalid value */
  public PoolConfig {
    Objects.requireNonNull(batching, "batching");
    Objects.requireNonNull(queue, "queue");
    SpecRules.require("maxRequeues", SpecRules.atLeast(maxRequeues, 0));
  }

  /** The {@code batching.max_batch_size} and {@code queue} of a deployment, with the default re-queue budget. */
  public static PoolConfig of(BatchingSpec batching, QueueSpec queue) {
    return new PoolConfig(batching, queue, DEFAULT_MAX_REQUEUES);
  }

  public int maxBatchSize() {
    return batching.maxBatchSize();
  }

  public Duration maxBatchDelay() {
    return batching.maxBatchDelay();
  }

  public int maxQueued() {
    return queue.maxQueued();
  }

  public Duration defaultTimeout() {
    return queue.timeout();
  }

  /** {@link RetryPolicy#WORKER_REQUEUE} with {@code maxRequeues}: how often a request outlives a failed worker. */
  public RetryPolicy requeuePolicy() {
    return RetryPolicy.WORKER_REQUEUE.withMaxRetries(maxRequeues);
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder().maxBatchSize(maxBatchSize()).maxBatchDelay(maxBatchDelay()).maxQueued(maxQueued())
        .defaultTimeout(defaultTimeout()).maxRequeues(maxRequeues);
  }

  /**
   * Builds a {@link PoolConfig}; each setter rejects an invalid value at once, by the rules of
   * {@link BatchingSpec} and {@link QueueSpec}. Not thread-safe.
   */
  public static final class Builder {
    private BatchingSpec batching = new BatchingSpec(DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_BATCH_DELAY);
    private QueueSpec queue = QueueSpec.DEFAULT;
    private int maxRequeues = DEFAULT_MAX_REQUEUES;

    private Builder() {
    }

    public Builder maxBatchSize(int rows) {
      this.batching = new BatchingSpec(rows, batching.maxBatchDelay());
      return this;
    }

    public Builder maxBatchDelay(Duration delay) {
      this.batching = new BatchingSpec(batching.maxBatchSize(), delay);
      return this;
    }

    public Builder maxQueued(int requests) {
      this.queue = new QueueSpec(requests, queue.timeout());
      return this;
    }

    public Builder defaultTimeout(Duration timeout) {
      this.queue = new QueueSpec(queue.maxQueued(), timeout);
      return this;
    }

    public Builder maxRequeues(int requeues) {
      SpecRules.require("maxRequeues", SpecRules.atLeast(requeues, 0));
      this.maxRequeues = requeues;
      return this;
    }

    public PoolConfig build() {
      return new PoolConfig(batching, queue, maxRequeues);
    }
  }
}
