package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.impl.JsonResponseEncoder.Encoded;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.Tensor;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Predicate;

/**
 * The OIP v2 REST API and {@code /metrics} as a Vert.x Web router. Handlers run on the event loop and never
 * block: the SPI is non-blocking by contract, and decoding or encoding a large body, like a metrics scrape,
 * runs on a worker thread.
 */
final class HttpApi {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(HttpApi.class);

  static final String JSON = "application/json";
  static final String OCTETS = "application/octet-stream";
  static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
  /** Bodies above this are decoded, and responses above it encoded, on a worker thread. */
  static final int OFFLOAD_BYTES = 256 * 1024;
  static final int CLIENT_CLOSED = 499;

  private final Vertx vertx;
  private final GatewayContext gw;
  private final ReadDeadlines deadlines;

  HttpApi(Vertx vertx, GatewayContext gw, ReadDeadlines deadlines) {
    this.vertx = vertx;
    this.gw = gw;
    this.deadlines = deadlines;
  }

  io.vertx.ext.web.Router router() {
    io.vertx.ext.web.Router r = io.vertx.ext.web.Router.router(vertx);
    r.route().order(-1).handler(ctx -> {
      deadlines.requestStarted(ctx.request(), answered -> ctx.addEndHandler(v -> answered.run()));
      ctx.next();
    });
    BodyHandler body = BodyHandler.create(false).setBodyLimit(gw.options().maxBodyBytes());
    r.get("/v2/health/live").handler(ctx -> json(ctx, 200, Map.of("live", true)));
    r.get("/v2/health/ready").handler(this::serverReady);
    r.get("/v2").handler(ctx -> send(ctx, 200, gw.encoder().serverMetadata("kiln", gw.options().serverVersion(),
        List.of("binary_tensor_data"))));
    r.get("/v2/models/:model").handler(this::modelMetadata);
    r.get("/v2/models/:model/versions/:version").handler(this::modelMetadata);
    r.get("/v2/models/:model/ready").handler(this::modelReady);
    r.get("/v2/models/:model/versions/:version/ready").handler(this::modelReady);
    r.post("/v2/models/:model/infer").handler(body).handler(this::infer);
    r.post("/v2/models/:model/versions/:version/infer").handler(body).handler(this::infer);
    r.get("/metrics").handler(this::metrics);
    r.route().failureHandler(this::failure);
    r.errorHandler(404, ctx -> error(ctx, 404, "no such endpoint: " + ctx.request().method() + " " + ctx.request().path()));
    r.errorHandler(405, ctx -> error(ctx, 405, "method " + ctx.request().method() + " not allowed on " + ctx.request().path()));
    return r;
  }

  private void serverReady(RoutingContext ctx) {
    String reason = gw.started().getAsBoolean() ? gw.models().notReadyReason()
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

  private void modelReady(RoutingContext ctx) {
    try {
      ModelInfo m = gw.models().find(ctx.pathParam("model"), ctx.pathParam("version"));
      if (m.loadedAndReady()) {
        json(ctx, 200, ordered("name", m.name(), "version", m.version(), "ready", true));
      } else {
        ctx.response().putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(gw.options().retryAfterSeconds()));
        Map<String, Object> body = ordered("name", m.name(), "version", m.version(), "ready", false);
        body.put("error", "model '" + m.name() + "' version '" + m.version() + "' is not ready");
        json(ctx, 503, body);
      }
    } catch (RuntimeException e) {
      fail(ctx, gw.errors().map(e));
    }
  }

  private void infer(RoutingContext ctx) {
    String name = ctx.pathParam("model");
    long start = gw.metrics().start();
    GatewayTrace trace = GatewayTrace.start(gw.spans(), ctx.request().getHeader(GatewayTrace.TRACEPARENT),
        ctx.request().getHeader(GatewayTrace.TRACESTATE), "http");
    Exchange ex = new Exchange(ctx, start, gw.models().label(name), trace);
    ctx.response().closeHandler(v -> ex.clientGone());
    ModelInfo model;
    try {
      model = gw.models().findReady(name, ctx.pathParam("version"));
    } catch (RuntimeException e) {
      ex.fail(e);
      return;
    }
    Buffer body = ctx.body().buffer();
    String headerLength = ctx.request().getHeader(HttpInferDecoder.HEADER_LENGTH);
    offload(body == null ? 0 : body.length(), () -> gw.httpDecoder().decode(model, body, headerLength))
        .compose(decoded -> {
          Predicate<String> binary = decoded.header().binaryOutputs();
          Hints hints = Hints.from(ctx.request().getHeader(Hints.NODE_HEADER), ctx.request().getHeader(Hints.TIMEOUT_HEADER),
              -1, decoded.header().parameters(), gw.locator());
          if (ex.clientGone) {
            return Future.failedFuture(InferenceException.unavailable("client went away"));
          }
          ex.requestId = decoded.request().request().id();
          Dispatcher.Call call = gw.dispatcher().dispatch(model, decoded.request(), hints,
              trace == null ? null : trace.forPool(ex.requestId));
          ex.call = call;
          return call.result().compose(response -> offload(outputBytes(response), () -> gw.encoder().infer(response, binary)));
        })
        .onSuccess(ex::reply)
        .onFailure(ex::fail);
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
      error(ctx, 413, "request body exceeds the limit of " + gw.options().maxBodyBytes() + " bytes");
    } else if (ctx.failure() != null) {
      fail(ctx, gw.errors().map(ctx.failure()));
    } else {
      int code = ctx.statusCode() > 0 ? ctx.statusCode() : 500;
      error(ctx, code, code == 400 ? "bad request" : "request failed");
    }
  }

  private <T> Future<T> offload(long bytes, Callable<T> work) {
    if (bytes > OFFLOAD_BYTES) {
      return vertx.executeBlocking(work, false);
    }
    try {
      return Future.succeededFuture(work.call());
    } catch (Exception e) {
      return Future.failedFuture(e);
    }
  }

  private static long outputBytes(InferenceResponse r) {
    long n = 0;
    for (Tensor t : r.outputs()) {
      n += t.data().length;
    }
    return n;
  }

  private void fail(RoutingContext ctx, ErrorMapper.Failure f) {
    if (f.retryable()) {
      ctx.response().putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(f.retryAfterSeconds()));
    }
    error(ctx, f.httpStatus(), f.message());
  }

  private void error(RoutingContext ctx, int status, String message) {
    json(ctx, status, Map.of("error", message));
  }

  private void json(RoutingContext ctx, int status, Map<String, Object> fields) {
    send(ctx, status, gw.encoder().object(fields));
  }

  private static void send(RoutingContext ctx, int status, Buffer json) {
    HttpServerResponse resp = ctx.response();
    if (resp.ended() || resp.closed()) {
      return;
    }
    resp.setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, JSON).end(json);
  }

  private static Map<String, Object> ordered(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  /** One infer request: answers it once and records its metrics once. */
  private final class Exchange {
    private final RoutingContext ctx;
    private final long start;
    private final String model;
    private final GatewayTrace trace; // null: none
    private boolean done;
    private boolean clientGone;
    Dispatcher.Call call;
    String requestId; // the OIP id, once decoded

    Exchange(RoutingContext ctx, long start, String model, GatewayTrace trace) {
      this.ctx = ctx;
      this.start = start;
      this.model = model;
      this.trace = trace;
      if (trace != null) {
        trace.model(model);
        ctx.response().putHeader(GatewayTrace.TRACEPARENT, trace.traceparent());
      }
    }

    /** The connection closed before the answer: withdraw the request, answer nothing. */
    void clientGone() {
      clientGone = true;
      if (call != null) {
        call.cancel();
      } else {
        finish("cancelled", Integer.toString(CLIENT_CLOSED));
      }
    }

    void reply(Encoded encoded) {
      if (!finish("ok", "200")) {
        return;
      }
      HttpServerResponse resp = ctx.response();
      if (resp.closed()) {
        return;
      }
      resp.setStatusCode(200);
      if (encoded.binary()) {
        resp.putHeader(HttpHeaders.CONTENT_TYPE, OCTETS)
            .putHeader(HttpInferDecoder.HEADER_LENGTH, Integer.toString(encoded.jsonLength()));
      } else {
        resp.putHeader(HttpHeaders.CONTENT_TYPE, JSON);
      }
      resp.end(encoded.body());
    }

    void fail(Throwable t) {
      if (clientGone) {
        finish("cancelled", Integer.toString(CLIENT_CLOSED));
        return;
      }
      ErrorMapper.Failure f;
      try (var log = GatewayTrace.log(requestId, trace)) { // an internal error is logged: name the request
        f = gw.errors().map(t);
      }
      if (finish(ErrorMapper.outcome(f.kind()), Integer.toString(f.httpStatus()))) {
        HttpApi.this.fail(ctx, f);
      }
    }

    private boolean finish(String outcome, String code) {
      if (done) {
        return false;
      }
      done = true;
      gw.metrics().finish(start, model, "http", outcome, code);
      if (trace != null) {
        trace.end(outcome, code, outcome.equals("ok"));
      }
      if (LOG.isDebugEnabled()) {
        try (var log = GatewayTrace.log(requestId, trace)) {
          LOG.debug("request {} to {} over http: {} {} after {} ms", requestId, model, outcome, code,
              (System.nanoTime() - start) / 1_000_000);
        }
      }
      return true;
    }
  }
}
