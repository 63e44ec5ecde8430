package io.kiln.pools;

import java.time.Duration;
import java.util.Objects;

/**
 * How often each worker's health is checked, and how long a check may take before the worker counts as
 * unhealthy (and is restarted under the pool's {@code max_restarts}).
 *
 * @param period time between checks, greater than 0
 * @param timeout longest a check may take, greater than 0 and at most {@code period}
 */
public record HealthSpec(Duration period, Duration timeout) {

  public static final Duration DEFAULT_PERIOD = Duration.ofSeconds(10);
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);
  public static final HealthSpec DEFAULT = new HealthSpec(DEFAULT_PERIOD, DEFAULT_TIMEOUT);

  public HealthSpec {
    Objects.requireNonNull(period, "period");
    Objects.requireNonNull(timeout, "timeout");
    SpecRules.require("period_ms", SpecRules.positive(period));
    SpecRules.require("timeout_ms", SpecRules.positive(timeout));
    SpecRules.require("timeout_ms", SpecRules.timeoutWithinPeriod(timeout, period));
  }
}
