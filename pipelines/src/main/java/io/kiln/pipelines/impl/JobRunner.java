package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobStatus;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The jobs one node coordinates: starts their coordinators, passes cancels and shutdown on. Thread-safe.
 */
public final class JobRunner {

  private final JobEnv env;
  private final Map<String, JobCoordinator> active = new ConcurrentHashMap<>();

  public JobRunner(JobEnv base) {
    this.env = new JobEnv(base.runtime(), base.store(), base.board(), base.index(), base.pipelines(),
        base.clockMillis(), base.statusPeriodMs(), id -> {
          active.remove(id);
          base.finished().accept(id);
        }, base.sync());
  }

  /** Starts coordinating; completes once the first status is stored. */
  public CompletionStage<Void> start(String id, JobSpec spec, InferTarget target, long createdAtMs) {
    JobCoordinator c = new JobCoordinator(env, id, spec, target, createdAtMs);
    active.put(id, c);
    return c.start().whenComplete((v, e) -> {
      if (e != null) {
        active.remove(id);
      }
    });
  }

  /** Completes with the job's last status once it ended here; null if this node does not coordinate it. */
  public CompletionStage<JobStatus> ended(String id) {
    JobCoordinator c = active.get(id);
    return c == null ? null : c.ended();
  }

  public boolean coordinates(String id) {
    return active.containsKey(id);
  }

  public void cancel(String id, String why) {
    JobCoordinator c = active.get(id);
    if (c != null) {
      c.cancel(why);
    }
  }

  public int active() {
    return active.size();
  }

  public void abandonAll(String why) {
    active.values().forEach(c -> c.abandon(why));
  }
}
