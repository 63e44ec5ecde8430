package io.kiln.serve.impl;

import io.kiln.serve.DeploymentSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What re-applying a running version would change. A pool is created with its model, batching, queue, health,
 * worker resources and restarts and keeps them (they are in its {@link io.kiln.pools.PoolSpec}); only a new
 * version, with new pools, rolls those out. Worker counts, the node selector and autoscaling are re-planned on every
 * pass, so they change in place. Pure functions.
 */
public final class SpecChanges {

  /** The settings that change in place for a running version. */
  public static final String IN_PLACE = "pool.workers_per_node / per_gpu / num_workers, pool.node_selector and"
      + " autoscaling change in place";

  private SpecChanges() {
  }

  /** The fields of {@code next} that differ from {@code running} and that running pools cannot take. */
  public static List<String> fixed(DeploymentSpec running, DeploymentSpec next) {
    List<String> changed = new ArrayList<>();
    if (!running.model().equals(next.model())) {
      changed.add("model");
    }
    if (!Objects.equals(running.repository(), next.repository())) {
      changed.add("repository");
    }
    if (!running.batching().equals(next.batching())) {
      changed.add("batching");
    }
    if (!running.queue().equals(next.queue())) {
      changed.add("queue");
    }
    if (!running.health().equals(next.health())) {
      changed.add("health");
    }
    if (!running.pool().workerResources().equals(next.pool().workerResources())) {
      changed.add("pool.worker_resources");
    }
    if (running.pool().maxRestarts() != next.pool().maxRestarts()) {
      changed.add("pool.max_restarts");
    }
    return changed;
  }

  /** Why {@code next} is refused while {@code running} (same version) runs, or null if it may be applied. */
  public static String refusal(DeploymentSpec running, DeploymentSpec next) {
    if (running == null || !running.version().equals(next.version())) {
      return null;
    }
    List<String> changed = fixed(running, next);
    if (changed.isEmpty()) {
      return null;
    }
    return "spec changed but version \"" + next.version() + "\" is the same: " + String.join(", ", changed)
        + (changed.size() == 1 ? " differs" : " differ") + " from the running deployment, whose pools keep what they"
        + " were created with; bump version to roll the change out (" + IN_PLACE + ")";
  }
}
