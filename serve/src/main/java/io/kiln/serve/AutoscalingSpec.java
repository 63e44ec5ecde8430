package io.kiln.serve;

import io.kiln.serve.impl.Rules;
import java.time.Duration;
import java.util.Objects;

/**
 * Per-node autoscaling of a pool: each node's manager starts {@code minWorkers} workers and keeps the
 * number between {@code minWorkers} and {@code maxWorkers} (never above the pool's own count) so that
 * each worker has about {@code targetOngoingPerWorker} requests queued or running. A scale-up happens once
 * the need has lasted {@code upscaleDelay}, a scale-down once it has lasted {@code downscaleDelay}.
 *
 * @param minWorkers workers per node at start and at least, 0 or more (0 lets an idle node scale to zero)
 * @param maxWorkers workers per node at most, at least 1 and at least {@code minWorkers}
 * @param targetOngoingPerWorker requests in flight per worker that scaling aims for, greater than 0
 * @param upscaleDelay how long the need to grow must last, not negative
 * @param downscaleDelay how long the need to shrink must last, not negative
 */
public record AutoscalingSpec(int minWorkers, int maxWorkers, double targetOngoingPerWorker, Duration upscaleDelay,
                              Duration downscaleDelay) {

  public static final int DEFAULT_MIN_WORKERS = 1;
  public static final double DEFAULT_TARGET_ONGOING_PER_WORKER = 2;
  public static final Duration DEFAULT_UPSCALE_DELAY = Duration.ZERO;
  public static final Duration DEFAULT_DOWNSCALE_DELAY = Duration.ofSeconds(30);

  public AutoscalingSpec {
    Objects.requireNonNull(upscaleDelay, "upscaleDelay");
    Objects.requireNonNull(downscaleDelay, "downscaleDelay");
    Rules.require("min_workers", Rules.atLeast(minWorkers, 0));
    Rules.require("max_workers", Rules.atLeast(maxWorkers, 1));
    Rules.require("max_workers", Rules.atMost(maxWorkers, PoolPlacement.MAX_WORKERS));
    Rules.require("min_workers", Rules.minWithinMax(minWorkers, maxWorkers));
    Rules.require("target_ongoing_per_worker", Rules.positive(targetOngoingPerWorker));
    Rules.require("upscale_delay_ms", Rules.notNegative(upscaleDelay));
    Rules.require("downscale_delay_ms", Rules.notNegative(downscaleDelay));
  }
}
