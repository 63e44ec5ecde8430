package io.kiln.pipelines.impl;

import io.kiln.pipelines.NodeCache;
import io.kiln.pipelines.PipelineException;
import io.kiln.pipelines.RunRequest;
import io.kiln.pipelines.RunState;
import io.kiln.pipelines.RunStatus;
import io.kiln.pipelines.StepKind;
import io.kiln.pipelines.StepStatus;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.runtime.Futures;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One input of a pipeline job: a run of the pipeline with the URI in its input field, watched until it
 * ends (its status read every {@value #POLL_MS} ms), its steps and their nodes becoming the input's result.
 * A failure's message starts with its cause ({@code pipeline:}, {@code overloaded:}), as {@link JobTasks}'
 * do. Non-blocking.
 */
final class PipelineJobRuns {

  static final long POLL_MS = 250;

  private PipelineJobRuns() {
  }

  /** Runs the pipeline for {@code uri}; completes with the result to write, or fails with the cause. */
  static CompletionStage<Map<String, Object>> run(JobEnv env, JobSpec spec, String jobId, String uri) {
    CompletableFuture<Map<String, Object>> out = new CompletableFuture<>();
    env.pipelines().startRun(spec.pipeline(), new RunRequest(Map.of(spec.inputField(), uri), ""))
        .whenComplete((runId, err) -> {
          if (err != null) {
            Throwable t = Futures.unwrapCompletion(err);
            boolean full = t instanceof PipelineException p && p.kind() == PipelineException.Kind.OVERLOADED;
            out.completeExceptionally(new RuntimeException((full ? "overloaded: " : "pipeline: ") + t.getMessage()));
          } else {
            poll(env, spec, jobId, uri, runId, out);
          }
        });
    return out;
  }

  private static void poll(JobEnv env, JobSpec spec, String jobId, String uri, String runId,
                           CompletableFuture<Map<String, Object>> out) {
    env.runtime().vertx().setTimer(POLL_MS, t -> env.pipelines().run(runId).whenComplete((st, err) -> {
      if (err == null && st.isEmpty()) {
        out.completeExceptionally(new RuntimeException("pipeline: run " + runId + " was forgotten"));
      } else if (err != null || !st.get().state().terminal()) {
        poll(env, spec, jobId, uri, runId, out);
      } else if (st.get().state() != RunState.SUCCEEDED) {
        out.completeExceptionally(new RuntimeException("pipeline: run " + runId + " " + st.get().state() + ": "
            + st.get().error()));
      } else {
        out.complete(result(spec, jobId, uri, st.get()));
      }
    }));
  }

  private static Map<String, Object> result(JobSpec spec, String jobId, String uri, RunStatus run) {
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("uri", uri);
    result.put("key", NodeCache.keyOf(uri));
    result.put("job", jobId);
    result.put("pipeline", spec.pipeline());
    result.put("run_id", run.runId());
    List<Map<String, Object>> steps = new ArrayList<>();
    String fetchNode = "";
    for (StepStatus step : run.steps()) {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("name", step.name());
      one.put("node", step.nodeId());
      one.put("output", step.output());
      steps.add(one);
      if (fetchNode.isEmpty() && step.kind() == StepKind.FETCH) {
        fetchNode = step.nodeId();
      }
    }
    result.put("fetch_node", fetchNode.isEmpty() ? run.coordinator() : fetchNode);
    result.put("steps", steps);
    return result;
  }
}
