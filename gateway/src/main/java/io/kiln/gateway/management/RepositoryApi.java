package io.kiln.gateway.management;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.PoolClient;
import io.kiln.pools.PoolLoad;
import io.kiln.pools.PoolLoadBoard;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The OIP model-repository extension over the models of multiplexed deployments (those with a {@code repository}),
 * as Triton serves it over HTTP:
 * <ul>
 *   <li>{@code POST /v2/repository/index}: every repository model as {@code {name, version, state, reason}}, state
 *       {@code READY} (a pool holds it loaded), {@code LOADING} or {@code UNAVAILABLE} (reason says why: not loaded
 *       yet, no ready pool); body optional, {@code {"ready": true}} lists only READY models;</li>
 *   <li>{@code POST /v2/repository/models/{m}/load}: loads {@code m} onto a worker of the local pool of its deployment,
 *       else of the least loaded ready pool; answers once loaded;</li>
 *   <li>{@code POST /v2/repository/models/{m}/unload}: closes {@code m} on every pool's workers that hold it (a later
 *       request loads it again).</li>
 * </ul>
 * A bearer token applies when configured (401 without it). Errors: {@code {"error": "..."}}; 404 for a model that is
 * in no multiplexed deployment, 503 (with {@code Retry-After}) when no pool is ready or as many loads run as allowed,
 * 500 when the model failed to load. There is no gRPC counterpart: the protocol module carries KServe's
 * {@code grpc_predict_v2.proto}, which has no repository service.
 *
 * <p><b>Threading:</b> handlers run on the HTTP server's event loop and never block: pool calls are actor calls.
 */
public final class RepositoryApi {

  /** Bodies are tiny JSON objects at most. */
  public static final int MAX_BODY_BYTES = 4096;

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final PoolLoadBoard board;
  private final PoolClient pools;
  private final BearerToken authorize;

  /** @param token required bearer token, or null/empty for none */
  public RepositoryApi(KilnRuntime runtime, ServeController serve, PoolLoadBoard board, PoolClient pools, String token) {
    this.runtime = runtime;
    this.serve = serve;
    this.board = board;
    this.pools = pools;
    this.authorize = new BearerToken(token);
  }

  /** Mounts the API on {@code r} under {@code /v2/repository/}. */
  public void mount(Router r) {
    Router api = Router.router(runtime.vertx());
    api.route().handler(authorize);
    api.route().handler(BodyHandler.create(false).setBodyLimit(MAX_BODY_BYTES));
    api.post("/index").handler(this::index);
    api.post("/models/:model/load").handler(ctx -> control(ctx, true));
    api.post("/models/:model/unload").handler(ctx -> control(ctx, false));
    api.route().failureHandler(ctx -> error(ctx, ctx.statusCode() > 0 ? ctx.statusCode() : 500,
        ctx.statusCode() == 413 ? "the body exceeds " + MAX_BODY_BYTES + " bytes" : "request failed"));
    r.route("/v2/repository/*").subRouter(api);
  }

  /** A multiplexed deployment's serving version and its pools' reports. */
  private record Served(DeploymentSpec spec, String version, List<PoolLoad> pools) {
  }

  private List<Served> multiplexed() {
    List<Served> out = new ArrayList<>();
    Map<String, DeploymentStatus> statuses = serve.statuses();
    serve.desired().forEach((name, spec) -> {
      if (spec.multiplexed()) {
        DeploymentStatus st = statuses.get(name);
        String version = st != null && st.servingVersion() != null ? st.servingVersion() : spec.version();
        out.add(new Served(spec, version, board.pools(name, version)));
      }
    });
    return out;
  }

  private void index(RoutingContext ctx) {
    boolean readyOnly = false;
    if (ctx.body() != null && ctx.body().length() > 0) {
      try {
        Object ready = ctx.body().asJsonObject().getValue("ready");
        readyOnly = Boolean.TRUE.equals(ready);
      } catch (RuntimeException e) {
        error(ctx, 400, "body: expected a JSON object such as {\"ready\": true}");
        return;
      }
    }
    boolean onlyReady = readyOnly;
    List<CompletableFuture<List<Map<String, Object>>>> parts = new ArrayList<>();
    for (Served s : multiplexed()) {
      parts.add(states(s));
    }
    CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
      List<Map<String, Object>> all = new ArrayList<>();
      parts.forEach(p -> all.addAll(p.join()));
      send(ctx, 200, onlyReady ? all.stream().filter(m -> "READY".equals(m.get("state"))).toList() : all);
    });
  }

  // Each model's state across the deployment's pools: READY wins over LOADING over UNAVAILABLE.
  private CompletableFuture<List<Map<String, Object>>> states(Served s) {
    List<CompletableFuture<Map<String, String>>> calls = new ArrayList<>();
    for (PoolLoad p : s.pools()) {
      if (p.ready()) {
        calls.add(pools.models(s.spec().name(), s.version(), p.nodeId()).toCompletableFuture()
            .exceptionally(e -> Map.of()));
      }
    }
    return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).thenApply(v -> {
      List<Map<String, Object>> out = new ArrayList<>();
      for (String name : s.spec().repository().names()) {
        String state = "UNAVAILABLE";
        for (CompletableFuture<Map<String, String>> c : calls) {
          String st = c.join().getOrDefault(name, "UNAVAILABLE");
          if (st.equals("READY") || st.equals("LOADING") && !state.equals("READY")) {
            state = st;
          }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", name);
        m.put("version", s.version());
        m.put("state", state);
        m.put("reason", state.equals("UNAVAILABLE")
            ? calls.isEmpty() ? "no ready pool of deployment '" + s.spec().name() + "'" : "not loaded" : "");
        m.put("deployment", s.spec().name());
        out.add(m);
      }
      return out;
    });
  }

  private void control(RoutingContext ctx, boolean load) {
    String model = ctx.pathParam("model");
    Served owner = null;
    for (Served s : multiplexed()) {
      if (s.spec().repository().model(model).isPresent()) {
        owner = s;
        break;
      }
    }
    if (owner == null) {
      error(ctx, 404, "model '" + model + "' is in no model repository");
      return;
    }
    Served s = owner;
    List<PoolLoad> ready = s.pools().stream().filter(PoolLoad::ready).toList();
    if (ready.isEmpty()) {
      ctx.response().putHeader(HttpHeaders.RETRY_AFTER, "1");
      error(ctx, 503, "no ready pool of deployment '" + s.spec().name() + "'");
      return;
    }
    CompletionStage<?> done;
    if (load) {
      PoolLoad target = ready.stream().filter(p -> p.nodeId().equals(runtime.nodeId())).findFirst()
          .orElseGet(() -> ready.stream().min(Comparator.comparingLong(PoolLoad::load)).orElseThrow());
      done = pools.loadModel(s.spec().name(), s.version(), target.nodeId(), model);
    } else {
      List<CompletableFuture<Integer>> calls = new ArrayList<>();
      ready.forEach(p -> calls.add(pools.unloadModel(s.spec().name(), s.version(), p.nodeId(), model)
          .toCompletableFuture()));
      done = CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new));
    }
    done.whenComplete((v, e) -> {
      if (e == null) {
        send(ctx, 200, Map.of());
        return;
      }
      Throwable t = Futures.unwrapCompletion(e);
      if (t instanceof CapacityExceededException c) {
        ctx.response().putHeader(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, c.retryAfter().toSeconds())));
      }
      int status = t instanceof InferenceException ie ? ie.kind().httpStatus() : 500;
      error(ctx, status, t.getMessage());
    });
  }

  private static void send(RoutingContext ctx, int status, Object body) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    ctx.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
        .end(WireCodec.toJson(body));
  }

  private static void error(RoutingContext ctx, int status, String message) {
    send(ctx, status, Map.of("error", message == null ? "request failed" : message));
  }
}
