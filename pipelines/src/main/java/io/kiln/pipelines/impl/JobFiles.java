package io.kiln.pipelines.impl;

import io.kiln.pipelines.InferTarget;
import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.runtime.WireCodec;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link JobCoordinator}'s output folder, written off the event loop: the spec and the inputs that have a
 * result already when the job starts, each batch's results as one durable group, a pipeline run's result,
 * and an input's failure record. Serialises the records; the folder's layout and durability are
 * {@link JobOutputs}'.
 *
 * <p>Thread-safe: every method may be called from any thread; the writes run on Vert.x worker threads and
 * their futures complete there.
 */
final class JobFiles {

  private static final Logger LOG = LoggerFactory.getLogger(JobCoordinator.class);

  private final JobEnv env;
  private final String jobId;
  private final JobSpec spec;
  private final InferTarget target;
  private final JobOutputs outputs;

  JobFiles(JobEnv env, String jobId, JobSpec spec, InferTarget target) {
    this.env = env;
    this.jobId = jobId;
    this.spec = spec;
    this.target = target;
    this.outputs = new JobOutputs(Path.of(spec.output()), env.sync());
  }

  private Vertx vertx() {
    return env.runtime().vertx();
  }

  /** Prepares the folder (writing the spec); the keys of the inputs that have a result already. */
  Future<Set<String>> prepare() {
    return vertx().executeBlocking(() -> outputs.prepare(WireCodec.toJson(spec).getBytes(StandardCharsets.UTF_8)),
        false);
  }

  /** Writes a batch's results as one durable group. */
  Future<Void> writeBatch(List<JobOutcome> done) {
    List<JobOutputs.Result> results = new java.util.ArrayList<>(done.size());
    for (JobOutcome o : done) {
      results.add(new JobOutputs.Result(o.key(), WireCodec.toJson(JobResults.result(jobId, target, o))
          .getBytes(StandardCharsets.UTF_8)));
    }
    return vertx().executeBlocking(() -> {
      outputs.writeResults(results);
      return null;
    }, false);
  }

  /** Writes one input's result under {@code key}. */
  Future<Void> writeResult(String key, Map<String, Object> result) {
    byte[] json = WireCodec.toJson(result).getBytes(StandardCharsets.UTF_8);
    return vertx().executeBlocking(() -> {
      outputs.writeResult(key, json);
      return null;
    }, false);
  }

  /** Records in {@code _failed/} that {@code uri} failed for good; a failed write is logged, nothing more. */
  void recordFailure(String uri, String node, String why, String message) {
    byte[] json = WireCodec.toJson(JobResults.failure(jobId, uri, node, why, message))
        .getBytes(StandardCharsets.UTF_8);
    vertx().executeBlocking(() -> {
      outputs.writeFailure(NodeCache.keyOf(uri), json);
      return null;
    }, false).onFailure(e -> LOG.warn("job {}: recording the failure of {} failed", jobId, uri, e));
  }
}
