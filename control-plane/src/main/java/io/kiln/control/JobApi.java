package io.kiln.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.Answers;
import io.kiln.gateway.RequestBodies;
import io.kiln.pipelines.PipelineException;
import io.kiln.pipelines.jobs.JobLoader;
import io.kiln.pipelines.jobs.JobSpec;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.DeploymentValidationException;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * The batch jobs REST API, mounted on the gateway's HTTP server:
 * <ul>
 *   <li>{@code POST /api/v1/jobs[?source=PATH]} — body: a job file (YAML, at most
 *       {@value JobLoader#MAX_FILE_BYTES} bytes; {@code source} is its path, against whose folder relative
 *       folders, manifests and the output resolve, on the node). 202 with {@code job_id}; 400 with
 *       {@code problems} (file, line, column, path, message) and nothing started; 404 deployment not ready;
 *       503 (with {@code Retry-After}) when the node coordinates too many jobs, or is on the smaller side of a
 *       partition (split-brain protection refused the job's record; the message names the minimum cluster size)</li>
 *   <li>{@code GET /api/v1/jobs} — jobs, newest first (summaries, at most {@value #MAX_LISTED})</li>
 *   <li>{@code GET /api/v1/jobs/{id}} — the status: counts, rate, ETA, failures by cause, results by node</li>
 *   <li>{@code GET /api/v1/jobs/{id}/logs} — the job's latest log lines</li>
 *   <li>{@code POST /api/v1/jobs/{id}/cancel}, {@code POST /api/v1/jobs/{id}/resume} — 202; 404 unknown; 503 with
 *       {@code Retry-After} on the smaller side of a partition</li>
 * </ul>
 * With a token configured every call needs {@code Authorization: Bearer <token>} (401 otherwise). Handlers
 * never block: the job file is read (folders listed, manifests read) on a worker thread.
 */
public final class JobApi {

  public static final int MAX_LISTED = 1000;
  /** Longest job id accepted in a path. */
  public static final int MAX_ID_CHARS = 128;

  private static final ObjectMapper JSON = WireCodec.json();

  private final KilnRuntime runtime;
  private final Jobs jobs;
  private final Handler<RoutingContext> authorize;

  /** @param token required bearer token, or null/empty for none */
  public JobApi(KilnRuntime runtime, Jobs jobs, String token) {
    this.runtime = runtime;
    this.jobs = jobs;
    this.authorize = Answers.authorize(token);
  }

  public void mount(Router r) {
    r.route("/api/v1/jobs*").handler(authorize);
    r.post("/api/v1/jobs").handler(Answers.rawBody()).handler(RequestBodies.upTo(JobLoader.MAX_FILE_BYTES))
        .handler(this::submit).failureHandler(ctx -> {
          int code = Answers.failureStatus(ctx);
          Answers.error(ctx, code, code == 413
              ? "the job file exceeds the limit of " + JobLoader.MAX_FILE_BYTES + " bytes"
              : "request failed" + (ctx.failure() == null ? "" : ": " + ctx.failure()));
        });
    r.get("/api/v1/jobs").handler(this::list);
    r.get("/api/v1/jobs/:id").handler(ctx -> withStatus(ctx, (s, c) -> Answers.json(c, 200, s)));
    r.get("/api/v1/jobs/:id/logs").handler(ctx -> withStatus(ctx, (s, c) -> Answers.json(c, 200,
        Map.of("id", s.id(), "state", s.state().name(), "logs", s.logs()))));
    r.post("/api/v1/jobs/:id/cancel").handler(this::cancel);
    r.post("/api/v1/jobs/:id/resume").handler(this::resume);
  }

  private void submit(RoutingContext ctx) {
    String yaml = ctx.body().asString(StandardCharsets.UTF_8.name());
    if (yaml == null || yaml.isBlank()) {
      Answers.error(ctx, 400, "body must be a job file (YAML)");
      return;
    }
    String source = ctx.request().getParam("source");
    Path sourcePath;
    try {
      sourcePath = source == null || source.isBlank() ? Path.of("job.yaml") : Path.of(source);
    } catch (InvalidPathException e) {
      Answers.error(ctx, 400, "source is not a valid path: " + e.getMessage());
      return;
    }
    runtime.vertx().executeBlocking(() -> new JobLoader().load(yaml, sourcePath), false)
        .toCompletionStage().thenCompose(spec -> jobs.submit(spec).thenApply(id -> Map.entry(id, spec)))
        .whenComplete((started, err) -> {
          if (err != null) {
            fail(ctx, "submitting the job", Futures.unwrapCompletion(err));
            return;
          }
          String url = "/api/v1/jobs/" + started.getKey();
          JobSpec spec = started.getValue();
          Map<String, Object> body = new LinkedHashMap<>();
          body.put("job_id", started.getKey());
          body.put("status", url);
          body.put("inputs", spec.inputs().size());
          body.put("output", spec.output());
          body.put("target", spec.target());
          ctx.response().putHeader(HttpHeaders.LOCATION, url);
          Answers.json(ctx, 202, body);
        });
  }

  private void list(RoutingContext ctx) {
    jobs.list().whenComplete((all, err) -> {
      if (err != null) {
        fail(ctx, "listing jobs", Futures.unwrapCompletion(err));
        return;
      }
      ObjectNode o = JSON.createObjectNode();
      ArrayNode list = o.putArray("jobs");
      for (JobStatus s : all.subList(0, Math.min(all.size(), MAX_LISTED))) {
        list.addObject().put("id", s.id()).put("name", s.name()).put("target", s.target())
            .put("state", s.state().name()).put("coordinator", s.coordinator()).put("total", s.total())
            .put("done", s.done()).put("failed", s.failed()).put("createdAtMs", s.createdAtMs())
            .put("endedAtMs", s.endedAtMs());
      }
      Answers.json(ctx, 200, o);
    });
  }

  private void withStatus(RoutingContext ctx, BiConsumer<JobStatus, RoutingContext> then) {
    String id = ctx.pathParam("id");
    if (id.length() > MAX_ID_CHARS) {
      Answers.error(ctx, 400, "job id longer than " + MAX_ID_CHARS + " characters");
      return;
    }
    jobs.status(id).whenComplete((s, err) -> {
      if (err != null) {
        fail(ctx, "reading job " + id, Futures.unwrapCompletion(err));
      } else if (s.isEmpty()) {
        Answers.error(ctx, 404, "no job " + id);
      } else {
        then.accept(s.get(), ctx);
      }
    });
  }

  private void cancel(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (id.length() > MAX_ID_CHARS) {
      Answers.error(ctx, 400, "job id longer than " + MAX_ID_CHARS + " characters");
      return;
    }
    jobs.cancel(id).whenComplete((found, err) -> {
      if (err != null) {
        fail(ctx, "cancelling job " + id, Futures.unwrapCompletion(err));
      } else if (!found) {
        Answers.error(ctx, 404, "no job " + id);
      } else {
        Answers.json(ctx, 202, Map.of("job_id", id, "cancel", "requested"));
      }
    });
  }

  private void resume(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (id.length() > MAX_ID_CHARS) {
      Answers.error(ctx, 400, "job id longer than " + MAX_ID_CHARS + " characters");
      return;
    }
    jobs.resume(id).whenComplete((x, err) -> {
      if (err != null) {
        fail(ctx, "resuming job " + id, Futures.unwrapCompletion(err));
      } else {
        Answers.json(ctx, 202, Map.of("job_id", id, "status", "/api/v1/jobs/" + id));
      }
    });
  }

  private static void fail(RoutingContext ctx, String what, Throwable t) {
    if (t instanceof BelowMinimumClusterSizeException) {
      Answers.belowMinimum(ctx, t);
    } else if (t instanceof DeploymentValidationException v) {
      Answers.problems(ctx, "the job file", "nothing was started", v.problems());
    } else if (t instanceof PipelineException p) {
      Answers.refused(ctx, p);
    } else {
      Answers.error(ctx, 500, what + " failed: " + t);
    }
  }
}
