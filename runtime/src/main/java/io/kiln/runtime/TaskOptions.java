package io.kiln.runtime;

import java.time.Duration;
import java.util.Objects;

/**
 * How a task runs: immutable, validated when built.
 *
 * @param resources held while the task runs (custom keys such as {@code fetch_slot} make per-node
 *     concurrency limits)
 * @param strategy where to place it
 * @param maxRetries re-runs after a system failure (node died, resources refused, worker lost); Ray's
 *     default is 3
 * @param retryExceptions whether an exception thrown by the function also counts as a failure to retry
 *     (only correct when the function is deterministic and its writes idempotent)
 * @param placementTimeout how long the task may wait for resources
 * @param timeout how long one attempt may run before the caller gives up
 */
public record TaskOptions(Resources resources, SchedulingStrategy strategy, int maxRetries, boolean retryExceptions,
                          Duration placementTimeout, Duration timeout) {

  /** {@link RetryPolicy#TASK_SYSTEM_FAILURE}'s: 3. */
  public static final int DEFAULT_MAX_RETRIES = RetryPolicy.TASK_SYSTEM_FAILURE.maxRetries();
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);
  public static final TaskOptions DEFAULT = builder().build();

  public TaskOptions {
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(strategy, "strategy");
    Objects.requireNonNull(placementTimeout, "placementTimeout");
    Objects.requireNonNull(timeout, "timeout");
    if (maxRetries < -1) {
      throw new IllegalArgumentException("maxRetries must be >= -1 (-1 = unlimited), got " + maxRetries);
    }
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must be positive");
    }
  }

  /** {@link RetryPolicy#TASK_SYSTEM_FAILURE} with this task's {@code maxRetries}. */
  public RetryPolicy retryPolicy() {
    return RetryPolicy.TASK_SYSTEM_FAILURE.withMaxRetries(maxRetries);
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder().resources(resources).strategy(strategy).maxRetries(maxRetries)
        .retryExceptions(retryExceptions).placementTimeout(placementTimeout).timeout(timeout);
  }

  /** Mutable builder; {@link #build()} validates. */
  public static final class Builder {
    private Resources resources = Resources.cpu(1);
    private SchedulingStrategy strategy = SchedulingStrategy.DEFAULT;
    private int maxRetries = DEFAULT_MAX_RETRIES;
    private boolean retryExceptions;
    private Duration placementTimeout = ActorOptions.DEFAULT_PLACEMENT_TIMEOUT;
    private Duration timeout = DEFAULT_TIMEOUT;

    public Builder resources(Resources resources) {
      this.resources = resources;
      return this;
    }

    public Builder strategy(SchedulingStrategy strategy) {
      this.strategy = strategy;
      return this;
    }

    public Builder maxRetries(int maxRetries) {
      this.maxRetries = maxRetries;
      return this;
    }

    public Builder retryExceptions(boolean retryExceptions) {
      this.retryExceptions = retryExceptions;
      return this;
    }

    public Builder placementTimeout(Duration placementTimeout) {
      this.placementTimeout = placementTimeout;
      return this;
    }

    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    public TaskOptions build() {
      return new TaskOptions(resources, strategy, maxRetries, retryExceptions, placementTimeout, timeout);
    }
  }
}
