package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The OIP v2 REST API and {@code /metrics} as a Vert.x Web router, behind {@link HttpInfer}, which serves the
 * plain infer paths without it. Handlers run on the event loop and never block: the SPI is non-blocking by contract, and decoding or encoding a large body, like a metrics scrape,
 * runs on a worker thread.
 */
final class HttpApi {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(HttpApi.class);

  static final String JSON = "application/json";
  static final String OCTETS = "application/octet-stream";
  static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
  static final int CLIENT_CLOSED = 499;

  private final Vertx vertx;
  private final GatewayContext gw;
  private final ReadDeadlines deadlines;
  private final HttpInfer infer;
  private final io.vertx.ext.web.Router router;

  HttpApi(Vertx vertx, GatewayContext gw, ReadDeadlines deadlines) {
    this.vertx = vertx;
    this.gw = gw;
    this.deadlines = deadlines;
    this.router = router();
    this.infer = new HttpInfer(vertx, gw, deadlines, router);
  }

  /** The router, for more routes; requests go to {@link #handler()}. */
  io.vertx.ext.web.Router routes() {
    return router;
  }

  /** Serves every request: plain infer paths itself, the rest through the router. */
  io.vertx.core.Handler<io.vertx.core.http.HttpServerRequest> handler() {
    return infer;
  }

  private io.vertx.ext.web.Router router() {
    io.vertx.ext.web.Router r = io.vertx.ext.web.Router.router(vertx);
    r.route().order(-1).handler(ctx -> {
      deadlines.requestStarted(ctx.request(), answered -> ctx.addEndHandler(v -> answered.run()));
      ExpectContinue.watch(ctx);
      ctx.next();
    });
    io.vertx.core.Handler<RoutingContext> body = ExpectContinue.body(gw.options().maxBodyBytes());
    r.get("/v2/health/live").handler(ctx -> json(ctx, 200, Map.of("live", true)));
    r.get("/v2/health/ready").handler(this::serverReady);
    r.get("/v2").handler(this::serverMetadata);
    r.get("/v2/models/:model").handler(this::modelMetadata);
    r.get("/v2/models/:model/versions/:version").handler(this::modelMetadata);
    r.get("/v2/models/:model/ready").handler(this::modelReady);
    r.get("/v2/models/:model/config").handler(this::modelConfig);
    r.get("/v2/models/:model/versions/:version/config").handler(this::modelConfig);
    r.get("/v2/models/:model/stats").handler(this::modelStats);
    r.get("/v2/models/:model/versions/:version/stats").handler(this::modelStats);
    r.get("/v2/models/:model/versions/:version/ready").handler(this::modelReady);
    // The plain infer paths never get here (HttpInfer serves them); these routes serve the other spellings.
    r.post("/v2/models/:model/infer").handler(body).handler(this::infer);
    r.post("/v2/models/:model/versions/:version/infer").handler(body).handler(this::infer);
    r.get("/metrics").handler(this::metrics);
    r.route().failureHandler(this::failure);
    r.errorHandler(404, ctx -> error(ctx, 404, "no such endpoint: " + ctx.request().method() + " " + ctx.request().path()));
    r.errorHandler(405, ctx -> error(ctx, 405, "method " + ctx.request().method() + " not allowed on " + ctx.request().path()));
    return r;
  }

  private void serverReady(RoutingContext ctx) {
    String reason = gw.started().getAsBoolean() ? gw.models().notReadyReason(gw.options().strictReadiness())
        : gw.holds().reason() != null ? gw.holds().reason() : "server is starting";
    if (reason == null) {
      json(ctx, 200, Map.of("ready", true));
    } else {
      ctx.response().putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(gw.options().retryAfterSeconds()));
      json(ctx, 503, ordered("ready", false, "error", "server not ready: " + reason));
    }
  }

  private void modelMetadata(RoutingContext ctx) {
    try {
      ModelInfo m = gw.models().find(ctx.pathParam("model"), ctx.pathParam("version"));
      send(ctx, 200, gw.encoder().modelMetadata(m));
    } catch (RuntimeException e) {
      fail(ctx, gw.errors().map(e));
    }
  }

  // The extensions this server answers: its own routes' and, when mounted (a node's management routes), the
  // repository extension's. Read per request: /v2 is rare, and routes are only added before the server starts.
  private void serverMetadata(RoutingContext ctx) {
    List<String> extensions = new java.util.ArrayList<>(List.of("binary_tensor_data", "model_configuration",
        "statistics", "generate", SharedMemoryApi.EXTENSION));
    if (router.getRoutes().stream().anyMatch(rt -> rt.getPath() != null && rt.getPath().startsWith("/v2/repository"))) {
      extensions.add(2, "model_repository");
    }
    send(ctx, 200, gw.encoder().serverMetadata("kiln", gw.options().serverVersion(), extensions));
  }

  private void modelConfig(RoutingContext ctx) {
    try {
      ModelInfo m = gw.models().find(ctx.pathParam("model"), ctx.pathParam("version"));
      send(ctx, 200, Buffer.buffer(io.kiln.runtime.WireCodec.toJson(ModelReports.config(m))));
    } catch (RuntimeException e) {
      fail(ctx, gw.errors().map(e));
    }
  }

  private void modelStats(RoutingContext ctx) {
    try {
      String version = ctx.pathParam("version");
      ModelInfo m = gw.models().find(ctx.pathParam("model"), version);
      send(ctx, 200, Buffer.buffer(io.kiln.runtime.WireCodec.toJson(ModelReports.stats(m, version != null,
          gw.registry(), gw.metrics().lastInferenceMillis(m.name())))));
    } catch (RuntimeException e) {
      fail(ctx, gw.errors().map(e));
    }
  }

  private void modelReady(RoutingContext ctx) {
    try {
      ModelInfo m = gw.models().find(ctx.pathParam("model"), ctx.pathParam("version"));
      if (m.loadedAndReady()) {
        json(ctx, 200, ordered("name", m.name(), "version", m.version(), "ready", true));
      } else {
        ctx.response().putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(gw.options().retryAfterSeconds()));
        Map<String, Object> body = ordered("name", m.name(), "version", m.version(), "ready", false);
        body.put("error", m.ready() ? "model '" + m.name() + "' version '" + m.version() + "' is not ready"
            : gw.models().notReadyMessage(m));
        json(ctx, 503, body);
      }
    } catch (RuntimeException e) {
      fail(ctx, gw.errors().map(e));
    }
  }

  private void infer(RoutingContext ctx) {
    infer.infer(ctx.request(), ctx.pathParam("model"), ctx.pathParam("version"), ctx.body().buffer());
  }

  private void metrics(RoutingContext ctx) {
    PrometheusMeterRegistry registry = gw.registry();
    vertx.executeBlocking(registry::scrape, false).onComplete(ar -> {
      if (ar.succeeded()) {
        ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, PROMETHEUS_TEXT).end(ar.result());
      } else {
        fail(ctx, gw.errors().map(ar.cause()));
      }
    });
  }

  private void failure(RoutingContext ctx) {
    if (ctx.statusCode() == 413) {
      String name = ctx.pathParam("model");
      if (name != null) {
        gw.metrics().finish(gw.metrics().start(), gw.models().label(name), "http", "too_large", "413");
      }
      // Also the 413 of the routes mounted beside these (management, pipelines, jobs): it names their own limit.
      error(ctx, 413, "request body exceeds the limit of " + ExpectContinue.limit(ctx, gw.options().maxBodyBytes())
          + " bytes");
    } else if (ctx.failure() != null) {
      fail(ctx, gw.errors().map(ctx.failure()));
    } else {
      int code = ctx.statusCode() > 0 ? ctx.statusCode() : 500;
      error(ctx, code, code == 400 ? "bad request" : "request failed");
    }
  }

  private void fail(RoutingContext ctx, ErrorMapper.Failure f) {
    HttpInfer.fail(gw, ctx.response(), f);
  }

  private void error(RoutingContext ctx, int status, String message) {
    HttpInfer.error(gw, ctx.response(), status, message);
  }

  private void json(RoutingContext ctx, int status, Map<String, Object> fields) {
    send(ctx, status, gw.encoder().object(fields));
  }

  private static void send(RoutingContext ctx, int status, Buffer json) {
    HttpInfer.send(ctx.response(), status, json);
  }

  private static Map<String, Object> ordered(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }
}
