package io.kiln.gateway.job;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.gateway.impl.ExpectContinue;
import io.kiln.gateway.management.BearerToken;
import io.kiln.gateway.management.ManagementApi;
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
import io.kiln.serve.Problem;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.PlatformHandler;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
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
  private final BearerToken authorize;

  /** @param token required bearer token, or null/empty for none */
  public JobApi(KilnRuntime runtime, Jobs jobs, String token) {
    this.runtime = runtime;
    this.jobs = jobs;
    this.authorize = new BearerToken(token);
  }

  public void mount(Router r) {
    r.route("/api/v1/jobs*").handler(authorize);
    r.post("/api/v1/jobs").handler(new RawBody()).handler(ExpectContinue.body(JobLoader.MAX_FILE_BYTES))
        .handler(this::submit).failureHandler(ctx -> {
          int code = ctx.statusCode() > 0 ? ctx.statusCode() : 500;
          error(ctx, code, code == 413 ? "the job file exceeds the limit of " + JobLoader.MAX_FILE_BYTES + " bytes"
              : "request failed" + (ctx.failure() == null ? "" : ": " + ctx.failure()));
        });
    r.get("/api/v1/jobs").handler(this::list);
    r.get("/api/v1/jobs/:id").handler(ctx -> withStatus(ctx, (s, c) -> send(c, 200, s)));
    r.get("/api/v1/jobs/:id/logs").handler(ctx -> withStatus(ctx, (s, c) -> send(c, 200, Map.of("id", s.id(),
        "state", s.state().name(), "logs", s.logs()))));
    r.post("/api/v1/jobs/:id/cancel").handler(this::cancel);
    r.post("/api/v1/jobs/:id/resume").handler(this::resume);
  }

  private void submit(RoutingContext ctx) {
    String yaml = ctx.body().asString(StandardCharsets.UTF_8.name());
    if (yaml == null || yaml.isBlank()) {
      error(ctx, 400, "body must be a job file (YAML)");
      return;
    }
    String source = ctx.request().getParam("source");
    Path sourcePath;
    try {
      sourcePath = source == null || source.isBlank() ? Path.of("job.yaml") : Path.of(source);
    } catch (InvalidPathException e) {
      error(ctx, 400, "source is not a valid path: " + e.getMessage());
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
          send(ctx, 202, body);
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
      send(ctx, 200, o);
    });
  }

  private void withStatus(RoutingContext ctx, BiConsumer<JobStatus, RoutingContext> then) {
    String id = ctx.pathParam("id");
    if (id.length() > MAX_ID_CHARS) {
      error(ctx, 400, "job id longer than " + MAX_ID_CHARS + " characters");
      return;
    }
    jobs.status(id).whenComplete((s, err) -> {
      if (err != null) {
        fail(ctx, "reading job " + id, Futures.unwrapCompletion(err));
      } else if (s.isEmpty()) {
        error(ctx, 404, "no job " + id);
      } else {
        then.accept(s.get(), ctx);
      }
    });
  }

  private void cancel(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (id.length() > MAX_ID_CHARS) {
      error(ctx, 400, "job id longer than " + MAX_ID_CHARS + " characters");
      return;
    }
    jobs.cancel(id).whenComplete((found, err) -> {
      if (err != null) {
        fail(ctx, "cancelling job " + id, Futures.unwrapCompletion(err));
      } else if (!found) {
        error(ctx, 404, "no job " + id);
      } else {
        send(ctx, 202, Map.of("job_id", id, "cancel", "requested"));
      }
    });
  }

  private void resume(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (id.length() > MAX_ID_CHARS) {
      error(ctx, 400, "job id longer than " + MAX_ID_CHARS + " characters");
      return;
    }
    jobs.resume(id).whenComplete((x, err) -> {
      if (err != null) {
        fail(ctx, "resuming job " + id, Futures.unwrapCompletion(err));
      } else {
        send(ctx, 202, Map.of("job_id", id, "status", "/api/v1/jobs/" + id));
      }
    });
  }

  private static void fail(RoutingContext ctx, String what, Throwable t) {
    if (t instanceof BelowMinimumClusterSizeException) {
      ctx.response().putHeader("Retry-After", Long.toString(ManagementApi.QUORUM_RETRY_AFTER_SECONDS));
      error(ctx, 503, t.getMessage());
    } else if (t instanceof DeploymentValidationException v) {
      problems(ctx, v.problems());
    } else if (t instanceof PipelineException p) {
      if (p.kind().httpStatus() == 503) {
        ctx.response().putHeader("Retry-After", "5");
      }
      error(ctx, p.kind().httpStatus(), p.getMessage());
    } else {
      error(ctx, 500, what + " failed: " + t);
    }
  }

  private static void problems(RoutingContext ctx, List<Problem> problems) {
    ObjectNode o = JSON.createObjectNode();
    o.put("error", problems.size() + " problem(s) in the job file; nothing was started");
    ArrayNode list = o.putArray("problems");
    for (Problem p : problems) {
      list.addObject().put("file", p.file()).put("line", p.line()).put("column", p.column())
          .put("path", p.path()).put("message", p.message());
    }
    send(ctx, 400, o);
  }

  static void send(RoutingContext ctx, int status, Object body) {
    if (ctx.response().ended()) {
      return;
    }
    ctx.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
        .end(WireCodec.toJson(body));
  }

  static void error(RoutingContext ctx, int status, String message) {
    send(ctx, status, Map.of("error", message == null ? "request failed" : message));
  }

  /** Drops a form content type so the body handler keeps the body whole (curl -d labels YAML a form). */
  private static final class RawBody implements PlatformHandler {
    @Override
    public void handle(RoutingContext ctx) {
      String type = ctx.request().getHeader(HttpHeaders.CONTENT_TYPE);
      if (type != null && (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/"))) {
        ctx.request().headers().remove(HttpHeaders.CONTENT_TYPE);
      }
      ctx.next();
    }
  }
}
