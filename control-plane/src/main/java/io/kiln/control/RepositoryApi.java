package io.kiln.control;

import io.kiln.control.impl.Answers;
import io.kiln.control.impl.RepositoryModels;
import io.kiln.gateway.RequestBodies;
import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.serve.ServeController;
import io.vertx.core.Handler;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The OIP model-repository extension as Triton serves it over HTTP; load and unload apply to the models of
 * multiplexed deployments (those with a {@code repository}):
 * <ul>
 *   <li>{@code POST /v2/repository/index}: every model served (each version of each plain deployment, each
 *       repository model) as {@code {name, version, state, reason, deployment}}, state {@code READY},
 *       {@code LOADING} or {@code UNAVAILABLE} (reason says why: not loaded yet, no ready pool, the controller's
 *       failure or placement message); body optional, {@code {"ready": true}} lists only READY models;</li>
 *   <li>{@code POST /v2/repository/models/{m}/load}: loads {@code m} onto a worker of the local pool of its deployment,
 *       else of the least loaded ready pool; answers once loaded;</li>
 *   <li>{@code POST /v2/repository/models/{m}/unload}: closes {@code m} on every pool's workers that hold it (a later
 *       request loads it again).</li>
 * </ul>
 * A bearer token applies when configured (401 without it). Errors: {@code {"error": "..."}}; 404 for a model that is
 * in no multiplexed deployment, 503 (with {@code Retry-After}) when no pool is ready or as many loads run as allowed,
 * 500 when the model failed to load. The operations themselves are {@link RepositoryModels}'; {@link RepositoryGrpc}
 * serves them over gRPC.
 *
 * <p><b>Threading:</b> handlers run on the HTTP server's event loop and never block: pool calls are actor calls.
 */
public final class RepositoryApi {

  /** Bodies are tiny JSON objects at most. */
  public static final int MAX_BODY_BYTES = 4096;

  private final KilnRuntime runtime;
  private final RepositoryModels models;
  private final Handler<RoutingContext> authorize;

  /** @param token required bearer token, or null/empty for none */
  public RepositoryApi(KilnRuntime runtime, ServeController serve, PoolAdmin pools, String token) {
    this.runtime = runtime;
    this.models = new RepositoryModels(runtime, serve, pools);
    this.authorize = Answers.authorize(token);
  }

  /** Mounts the API on {@code r} under {@code /v2/repository/}. */
  public void mount(Router r) {
    Router api = Router.router(runtime.vertx());
    api.route().handler(authorize);
    api.route().handler(RequestBodies.upTo(MAX_BODY_BYTES));
    api.post("/index").handler(this::index);
    api.post("/models/:model/load").handler(ctx -> control(ctx, true));
    api.post("/models/:model/unload").handler(ctx -> control(ctx, false));
    api.route().failureHandler(ctx -> Answers.error(ctx, Answers.failureStatus(ctx),
        ctx.statusCode() == 413 ? "the body exceeds " + MAX_BODY_BYTES + " bytes" : "request failed"));
    r.route("/v2/repository/*").subRouter(api);
  }

  private void index(RoutingContext ctx) {
    boolean readyOnly = false;
    if (ctx.body() != null && ctx.body().length() > 0) {
      try {
        Object ready = ctx.body().asJsonObject().getValue("ready");
        readyOnly = Boolean.TRUE.equals(ready);
      } catch (RuntimeException e) {
        Answers.error(ctx, 400, "body: expected a JSON object such as {\"ready\": true}");
        return;
      }
    }
    models.index(readyOnly).whenComplete((all, e) -> {
      List<Map<String, Object>> out = new ArrayList<>();
      for (RepositoryModels.Entry m : all) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("name", m.name());
        j.put("version", m.version());
        j.put("state", m.state());
        j.put("reason", m.reason());
        j.put("deployment", m.deployment());
        out.add(j);
      }
      Answers.json(ctx, 200, out);
    });
  }

  private void control(RoutingContext ctx, boolean load) {
    String model = ctx.pathParam("model");
    (load ? models.load(model) : models.unload(model)).whenComplete((v, e) -> {
      if (e == null) {
        Answers.json(ctx, 200, Map.of());
        return;
      }
      Throwable t = Futures.unwrapCompletion(e);
      if (t instanceof CapacityExceededException c) {
        Answers.retryAfter(ctx, Math.max(1, c.retryAfter().toSeconds()));
      }
      int status = t instanceof InferenceException ie ? ie.kind().httpStatus() : 500;
      Answers.error(ctx, status, t.getMessage());
    });
  }
}
