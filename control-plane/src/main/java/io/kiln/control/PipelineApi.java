package io.kiln.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.Answers;
import io.kiln.control.impl.RunEvents;
import io.kiln.gateway.RequestBodies;
import io.kiln.pipelines.PipelineException;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.RunRequest;
import io.kiln.pipelines.RunStatus;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.WireCodec;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The pipelines REST API, mounted on the gateway's HTTP server. Pipelines are declared in deployment files
 * and applied with their deployments by the management API's {@code POST /api/v1/deployments} (one
 * {@link io.kiln.pipelines.Applications#apply}); its answer carries header {@value #PIPELINES_HEADER}
 * naming the file's pipelines. Here:
 * <ul>
 *   <li>{@code GET /api/v1/pipelines}, {@code GET|DELETE /api/v1/pipelines/{name}}</li>
 *   <li>{@code POST /api/v1/pipelines/{name}/runs} — body {@code {"input": {...}, "webhook": "..."}} (at
 *       most {@value #MAX_RUN_BODY_BYTES} bytes); 202 with {@code run_id}; 404 unknown pipeline, 400 bad
 *       input, 503 (with {@code Retry-After}) overloaded, or on the smaller side of a partition (split-brain
 *       protection refused the run's record; the message names the minimum cluster size, nothing was started)</li>
 *   <li>{@code GET /api/v1/pipelines/{name}/runs} — recent runs, newest first (summaries)</li>
 *   <li>{@code GET /api/v1/pipelines/{name}/runs/{id}} — the run: each step's state, node, timings,
 *       result, and the run's events</li>
 *   <li>{@code GET /api/v1/pipelines/{name}/runs/{id}/events} — Server-Sent Events: the recorded events,
 *       then live ones until the run ends (resume with {@code Last-Event-ID})</li>
 *   <li>{@code GET /api/v1/cache} — this node's cached inputs and the cluster's index of them</li>
 * </ul>
 * With a token configured every call needs {@code Authorization: Bearer <token>} (401 otherwise). Handlers
 * never block.
 */
public final class PipelineApi {

  public static final int MAX_RUN_BODY_BYTES = 256 * 1024;
  public static final String PIPELINES_HEADER = "Kiln-Pipelines";

  private static final ObjectMapper JSON = WireCodec.json();

  private final KilnRuntime runtime;
  private final Pipelines pipelines;
  private final Handler<RoutingContext> authorize;

  /** @param token required bearer token, or null/empty for none */
  public PipelineApi(KilnRuntime runtime, Pipelines pipelines, String token) {
    this.runtime = runtime;
    this.pipelines = pipelines;
    this.authorize = Answers.authorize(token);
  }

  public void mount(Router r) {
    r.route("/api/v1/pipelines*").handler(authorize);
    r.route("/api/v1/cache*").handler(authorize);
    r.get("/api/v1/pipelines").handler(this::list);
    r.get("/api/v1/pipelines/:name").handler(this::get);
    r.delete("/api/v1/pipelines/:name").handler(this::delete);
    r.post("/api/v1/pipelines/:name/runs").handler(RequestBodies.upTo(MAX_RUN_BODY_BYTES)).handler(this::startRun);
    r.get("/api/v1/pipelines/:name/runs").handler(this::runs);
    r.get("/api/v1/pipelines/:name/runs/:id").handler(this::run);
    r.get("/api/v1/pipelines/:name/runs/:id/events").handler(ctx -> new RunEvents(runtime, pipelines, ctx).start());
    r.get("/api/v1/cache").handler(this::cache);
  }

  private void list(RoutingContext ctx) {
    pipelines.pipelines().whenComplete((specs, err) -> {
      if (err != null) {
        Answers.error(ctx, 500, "listing pipelines failed: " + Futures.unwrapCompletion(err));
        return;
      }
      ObjectNode o = JSON.createObjectNode();
      ArrayNode list = o.putArray("pipelines");
      specs.forEach(s -> list.add(JSON.valueToTree(s)));
      Answers.json(ctx, 200, o);
    });
  }

  private void get(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    pipelines.pipeline(name).whenComplete((spec, err) -> {
      if (err != null) {
        Answers.error(ctx, 500, "reading pipeline " + name + " failed: " + Futures.unwrapCompletion(err));
      } else if (spec.isEmpty()) {
        Answers.error(ctx, 404, "no pipeline named '" + name + "'");
      } else {
        Answers.json(ctx, 200, spec.get());
      }
    });
  }

  private void delete(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    pipelines.delete(name).whenComplete((found, err) -> {
      if (Futures.unwrapCompletion(err) instanceof BelowMinimumClusterSizeException b) {
        Answers.belowMinimum(ctx, b);
      } else if (err != null) {
        Answers.error(ctx, 500, "deleting pipeline " + name + " failed: " + Futures.unwrapCompletion(err));
      } else if (!found) {
        Answers.error(ctx, 404, "no pipeline named '" + name + "'");
      } else {
        Answers.json(ctx, 200, Map.of("deleted", name));
      }
    });
  }

  private void startRun(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    RunRequest request;
    try {
      request = parseRunRequest(ctx.body().asString(StandardCharsets.UTF_8.name()));
    } catch (IllegalArgumentException e) {
      Answers.error(ctx, 400, e.getMessage());
      return;
    }
    pipelines.startRun(name, request).whenComplete((id, err) -> {
      if (err != null) {
        Throwable t = Futures.unwrapCompletion(err);
        if (t instanceof BelowMinimumClusterSizeException b) {
          Answers.belowMinimum(ctx, b);
        } else if (t instanceof PipelineException p) {
          Answers.refused(ctx, p);
        } else {
          Answers.error(ctx, 500, "starting a run of " + name + " failed: " + t);
        }
        return;
      }
      String url = "/api/v1/pipelines/" + name + "/runs/" + id;
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("run_id", id);
      body.put("status", url);
      body.put("events", url + "/events");
      ctx.response().putHeader(HttpHeaders.LOCATION, url);
      Answers.json(ctx, 202, body);
    });
  }

  /** {@code {"input": {k: scalar}, "webhook": "..."}}; an empty body is a run without input. */
  static RunRequest parseRunRequest(String body) {
    if (body == null || body.isBlank()) {
      return RunRequest.of(Map.of());
    }
    JsonNode root;
    try {
      root = JSON.readTree(body);
    } catch (Exception e) {
      throw new IllegalArgumentException("body must be JSON: {\"input\": {...}, \"webhook\": \"...\"}");
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException("body must be a JSON object: {\"input\": {...}}");
    }
    Map<String, String> input = new LinkedHashMap<>();
    JsonNode in = root.path("input");
    if (!in.isMissingNode() && !in.isNull()) {
      if (!in.isObject()) {
        throw new IllegalArgumentException("'input' must be an object of strings, numbers or booleans");
      }
      for (var it = in.fields(); it.hasNext(); ) {
        var e = it.next();
        if (!e.getValue().isValueNode() || e.getValue().isNull()) {
          throw new IllegalArgumentException("input." + e.getKey() + " must be a string, number or boolean");
        }
        input.put(e.getKey(), e.getValue().asText());
      }
    }
    for (var it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!f.equals("input") && !f.equals("webhook")) {
        throw new IllegalArgumentException("unknown field '" + f + "'; expected input and webhook");
      }
    }
    JsonNode webhook = root.path("webhook");
    if (!webhook.isMissingNode() && !webhook.isNull() && !webhook.isTextual()) {
      throw new IllegalArgumentException("'webhook' must be a URL string");
    }
    return new RunRequest(input, webhook.isTextual() ? webhook.asText() : "");
  }

  private void runs(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    pipelines.runs(name).whenComplete((runs, err) -> {
      if (err != null) {
        Answers.error(ctx, 500, "listing runs failed: " + Futures.unwrapCompletion(err));
        return;
      }
      ObjectNode o = JSON.createObjectNode();
      ArrayNode list = o.putArray("runs");
      for (RunStatus s : runs.subList(0, Math.min(runs.size(), 1000))) {
        list.addObject().put("runId", s.runId()).put("state", s.state().name()).put("coordinator", s.coordinator())
            .put("createdAtMs", s.createdAtMs()).put("endedAtMs", s.endedAtMs()).put("error", s.error());
      }
      Answers.json(ctx, 200, o);
    });
  }

  private void run(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    String id = ctx.pathParam("id");
    pipelines.run(id).whenComplete((s, err) -> {
      if (err != null) {
        Answers.error(ctx, 500, "reading run " + id + " failed: " + Futures.unwrapCompletion(err));
      } else if (s.isEmpty() || !s.get().pipeline().equals(name)) {
        Answers.error(ctx, 404, "no run " + id + " of pipeline '" + name + "'");
      } else {
        Answers.json(ctx, 200, s.get());
      }
    });
  }

  private void cache(RoutingContext ctx) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("node", runtime.nodeId());
    var cache = pipelines.cache();
    body.put("usedBytes", cache == null ? 0 : cache.usedBytes());
    body.put("maxBytes", cache == null ? 0 : cache.options().maxBytes());
    body.put("entries", cache == null ? List.of() : cache.entries());
    body.put("index", pipelines.cacheIndex().snapshot());
    body.put("steps", pipelines.stepLoads().values());
    Answers.json(ctx, 200, body);
  }
}
