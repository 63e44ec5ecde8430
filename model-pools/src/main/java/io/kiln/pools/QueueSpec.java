package io.kiln.pools;

import java.time.Duration;
import java.util.Objects;

/**
 * The bounded request queue of each pool manager: requests beyond {@code maxQueued} are refused at once
 * (503 with {@code Retry-After}), and a request still queued after {@code timeout} fails (504).
 *
 * @param maxQueued most requests waiting on one node, at least 1
 * @param timeout deadline of a request that carries none, greater than 0
 */
public record QueueSpec(int maxQueued, Duration timeout) {

  public static final int DEFAULT_MAX_QUEUED = 512;
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
  public static final int MAX_QUEUED = 10_000_000;
  public static final QueueSpec DEFAULT = new QueueSpec(DEFAULT_MAX_QUEUED, DEFAULT_TIMEOUT);

  public QueueSpec {
    Objects.requireNonNull(timeout, "timeout");
    SpecRules.require("max_queued", SpecRules.atLeast(maxQueued, 1));
    SpecRules.require("max_queued", SpecRules.atMost(maxQueued, MAX_QUEUED));
    SpecRules.require("timeout_ms", SpecRules.positive(timeout));
  }
}
