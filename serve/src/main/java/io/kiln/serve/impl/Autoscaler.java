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
 * <p>A pool keeps at least one worker even with {@code min_workers: 0}: routing only sends requests to a
 * pool with a ready worker, so a pool scaled to zero would never see the load that scales it up again.
 *
 * <p>Pure apart from the per-pool memory of when a direction was first wanted; time is passed in.
 * Not thread-safe: the controller calls it from its one context.
 */
public final class Autoscaler {

  /**
   * A decision.
   *
   * @param target the count to scale to (the current target when there is no change)
   * @param waiting whether a change is wanted but its delay has not passed yet
   * @param reason why, in a phrase
   */
  public record Decision(int target, boolean waiting, String reason) {
  }

  private record Wish(int direction, long sinceMillis) {
  }

  private final Map<String, Wish> wishes = new HashMap<>();

  /**
   * @param pool identifies the pool (deployment, version, node)
   * @param current the controller's current target for the pool (workers may still be starting)
   * @param outstanding queued plus executing requests
   * @param hostable the most workers the node could host (its total resources, a per-GPU count)
   */
  public Decision decide(String pool, AutoscalingSpec spec, int current, long outstanding, int hostable, long nowMillis) {
    int max = Math.max(1, Math.min(spec.maxWorkers(), hostable));
    int min = Math.max(1, Math.min(spec.minWorkers(), max));
    long wanted = (long) Math.ceil(outstanding / spec.targetOngoingPerWorker());
    int target = (int) Math.max(min, Math.min(max, wanted));
    if (current < min || current > max) {
      wishes.remove(pool);
      int bounded = Math.max(min, Math.min(max, current));
      return new Decision(bounded, false, "scale " + current + " -> " + bounded + " (" + (current < min
          ? "below min_workers " + min : "above the most the node hosts, " + max) + ")");
    }
    int direction = Integer.compare(target, current);
    if (direction == 0) {
      wishes.remove(pool);
      return new Decision(current, false, "steady: " + outstanding + " outstanding for " + current + " workers");
    }
    Wish w = wishes.get(pool);
    if (w == null || w.direction() != direction) {
      w = new Wish(direction, nowMillis);
      wishes.put(pool, w);
    }
    long delay = (direction > 0 ? spec.upscaleDelay() : spec.downscaleDelay()).toMillis();
    String why = outstanding + " outstanding requests, target " + spec.targetOngoingPerWorker() + " per worker"
        + (direction > 0 && wanted > max ? ", at most " + max + " here" : "");
    String verb = direction > 0 ? "up" : "down";
    if (nowMillis - w.sinceMillis() < delay) {
      return new Decision(current, true, "waiting " + (delay - (nowMillis - w.sinceMillis())) + " ms to scale " + verb
          + " to " + target + " (" + why + ")");
    }
    wishes.remove(pool);
    return new Decision(target, false, "scale " + verb + " " + current + " -> " + target + " (" + why + ")");
  }

  /** Forgets a pool that went away. */
  public void forget(String pool) {
    wishes.remove(pool);
  }
}
