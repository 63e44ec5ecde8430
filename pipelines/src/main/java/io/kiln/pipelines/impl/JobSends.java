package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.TaskOptions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Where a {@link JobCoordinator}'s inputs can go and how they get there: the free room per node serving the
 * deployment (or the one pseudo-node of a pipeline job's runs), the serving node that caches an input, and
 * the runtime task that carries a batch of inputs to its node (or the pipeline run of one input). Keeps no
 * state of its own: the room is counted in the coordinator's {@link JobRoom}.
 *
 * <p>Threading: {@link #room} reads the {@link JobRoom} and is called holding the coordinator's monitor;
 * the rest may be called from any thread.
 */
final class JobSends {

  /** The one "node" of a pipeline job's bookkeeping: runs place themselves. */
  static final String PIPELINE_RUNS = "";

  private final JobEnv env;
  private final String jobId;
  private final JobSpec spec;
  private final InferTarget target; // null for a pipeline job
  private final JobRoom rooms;

  JobSends(JobEnv env, String jobId, JobSpec spec, InferTarget target, JobRoom rooms) {
    this.env = env;
    this.jobId = jobId;
    this.spec = spec;
    this.target = target;
    this.rooms = rooms;
  }

  /** Free places per node serving the deployment (one pseudo-node for a pipeline job); holds the monitor. */
  Map<String, Integer> room(long nowMs) {
    if (target == null) {
      // A pipeline job: each input is one run, placed by the pipeline's own steps (its fetch step's strategy
      // and slots, its infer step pinned to the fetch's node); the job bounds only how many run at once.
      int cap = Math.min(spec.perNode() * Math.max(1, env.runtime().members().size()), spec.maxInFlight());
      Map<String, Integer> room = new TreeMap<>();
      room.put(PIPELINE_RUNS, cap - rooms.inFlightOn(PIPELINE_RUNS));
      return room;
    }
    return rooms.room(target, env.board().pools(target.deployment(), target.version()),
        Set.copyOf(env.runtime().members()), nowMs);
  }

  /** A node serving the deployment that caches {@code uri}, or null. */
  String cachedNode(String uri, Set<String> serving) {
    if (target == null) {
      return null;
    }
    for (String n : env.index().nodesFor(NodeCache.keyOf(uri))) {
      if (serving.contains(n)) {
        return n;
      }
    }
    return null;
  }

  /** Sends the inputs {@code indices} to {@code node} as one runtime task (a deployment job's). */
  CompletionStage<JobOutcome.Batch> batch(List<Integer> indices, String node) {
    JobBatch batch = new JobBatch(jobId, indices, indices.stream().map(spec.inputs()::get).toList(),
        target.deployment(), target.version(), target.inputs(), spec.format(), spec.tensor(), spec.maxBytes(),
        spec.timeoutMs(), spec.priority() == io.kiln.pipelines.jobs.JobSpec.Priority.LOW);
    // No CPU of the node's ledger: the task mostly waits (downloads, the pool's answers); per_node bounds how many
    // inputs a node has, its fetch slots how many downloads, and the pool's workers hold the model's resources.
    TaskOptions options = TaskOptions.builder().resources(io.kiln.runtime.Resources.NONE)
        .strategy(SchedulingStrategy.onNode(node)).maxRetries(0)
        .retryExceptions(false).placementTimeout(Duration.ofMillis(spec.timeoutMs()))
        .timeout(Duration.ofMillis(2 * spec.timeoutMs() + 15_000)).build(); // the group's fetch, then its analyses
    try {
      return env.runtime().task(JobTasks::runBatch, batch).options(options).remote();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Runs the pipeline on the input {@code uri} (a pipeline job's). */
  CompletionStage<Map<String, Object>> run(String uri) {
    return PipelineJobRuns.run(env, spec, jobId, uri);
  }
}
