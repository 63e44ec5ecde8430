package io.kiln.serve.impl;

import io.kiln.serve.AutoscalingSpec;
import java.util.HashMap;
import java.util.Map;

/**
 * Per-pool autoscaling decisions, Ray Serve style: the desired worker count is the outstanding requests
 * (queued + executing) divided by {@code target_ongoing_per_worker}, rounded up and clamped to
 * {@code [min_workers, max_workers]} and to what the node can host. A change is made only once the same
 * direction has been wanted for the upscale (or downscale) delay, so a burst does not thrash the pool.
 *
 * <p>Pure apart from the per-pool memory of when a direction was first wanted; time is passed in.
 * Not thread-safe: the controller calls it from its one context.
 */
public final class Autoscaler {

  /** A decision: the count to scale to (equal to current for none), and why. */
  public record Decision(int target, String reason) {
  }

  private record Wish(int direction, long sinceMillis) {
  }

  private final Map<String, Wish> wishes = new HashMap<>();

  /**
   * @param pool identifies the pool (deployment, version, node)
   * @param current live workers now
   * @param outstanding queued plus executing requests
   * @param hostable the most workers the node could host (its total resources)
   */
  public Decision decide(String pool, AutoscalingSpec spec, int current, long outstanding, int hostable, long nowMillis) {
    int max = Math.max(1, Math.min(spec.maxWorkers(), hostable));
    int min = Math.min(spec.minWorkers(), max);
    int wanted = (int) Math.min(Integer.MAX_VALUE, (long) Math.ceil(outstanding / spec.targetOngoingPerWorker()));
    int target = Math.max(min, Math.min(max, wanted));
    if (current < min) {
      wishes.remove(pool);
      return new Decision(min, "below min_workers " + min);
    }
    int direction = Integer.compare(target, current);
    if (direction == 0) {
      wishes.remove(pool);
      return new Decision(current, "steady: " + outstanding + " outstanding for " + current + " workers");
    }
    Wish w = wishes.get(pool);
    if (w == null || w.direction() != direction) {
      w = new Wish(direction, nowMillis);
      wishes.put(pool, w);
    }
    long delay = (direction > 0 ? spec.upscaleDelay() : spec.downscaleDelay()).toMillis();
    String why = outstanding + " outstanding requests, target " + spec.targetOngoingPerWorker() + " per worker";
    if (nowMillis - w.sinceMillis() < delay) {
      return new Decision(current, "waiting " + (delay - (nowMillis - w.sinceMillis())) + " ms to scale "
          + (direction > 0 ? "up" : "down") + " to " + target + " (" + why + ")");
    }
    wishes.remove(pool);
    return new Decision(target, "scale " + (direction > 0 ? "up" : "down") + " " + current + " -> " + target + " (" + why
        + ")");
  }

  /** Forgets a pool that went away. */
  public void forget(String pool) {
    wishes.remove(pool);
  }
}
