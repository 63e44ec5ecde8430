package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.ChunkListener;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ResponseStream;
import io.kiln.pools.ValidatedRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Triton's generate extension: {@code POST /v2/models/{m}[/versions/{v}]/generate} (one JSON answer, the chunks
 * gathered, see {@link GenerateCodec}) and {@code .../generate_stream} (Server-Sent Events: one
 * {@code data: {json}} event per chunk; an error after the first event is a final {@code event: error} with
 * {@code data: {"error": "..."}}, never a silent close). Until the first event is written a failure is an
 * ordinary error answer with its status (400, 404, 503 with Retry-After, 504); {@code generate} holds at most the
 * gateway's body limit of chunk tensors (413 past it). A model that does not stream
 * answers {@code generate_stream} with one event.
 *
 * <p>Flow control: when the connection's write queue is full the stream is paused (the worker stops after its
 * credit window) and resumed on drain, so a slow reader costs at most the window of chunks. A client that closes
 * the connection cancels the stream: its worker stops before the next chunk. Handlers run on the event loop.
 */
final class GenerateApi {

  static final String EVENT_STREAM = "text/event-stream; charset=utf-8";

  private final GatewayContext gw;
  private final StreamDispatcher streams;

  GenerateApi(GatewayContext gw, StreamDispatcher streams) {
    this.gw = gw;
    this.streams = streams;
  }

  /** Adds the routes to the OIP router. */
  void register(Router r) {
    BodyHandler body = BodyHandler.create(false).setBodyLimit(gw.options().maxBodyBytes());
    for (String prefix : List.of("/v2/models/:model", "/v2/models/:model/versions/:version")) {
      r.post(prefix + "/generate").handler(body).handler(ctx -> generate(ctx, false));
      r.post(prefix + "/generate_stream").handler(body).handler(ctx -> generate(ctx, true));
    }
  }

  private void generate(RoutingContext ctx, boolean sse) {
    String name = ctx.pathParam("model");
    long start = gw.metrics().start();
    String label = gw.models().label(name);
    Exchange ex = new Exchange(ctx, start, label, sse);
    ModelInfo model;
    ValidatedRequest request;
    Hints hints;
    try {
      model = gw.models().findReady(name, ctx.pathParam("version"));
      request = GenerateCodec.decode(model, ctx.body().buffer());
      hints = Hints.from(ctx.request().getHeader(Hints.NODE_HEADER), ctx.request().getHeader(Hints.TIMEOUT_HEADER),
          -1, request.request().parameters(), gw.locator());
      ex.model = model;
      ex.stream = streams.open(model, request, hints, ex);
    } catch (RuntimeException e) {
      ex.error(e);
      return;
    }
    ctx.response().closeHandler(v -> ex.clientGone());
  }

  /** One generate call: writes its events or its one answer, and records its metrics once. */
  private final class Exchange implements ChunkListener {
    private final RoutingContext ctx;
    private final long start;
    private final String label;
    private final boolean sse;
    private final List<InferenceResponse> gathered = new ArrayList<>();
    private long gatheredBytes;
    ModelInfo model;
    ResponseStream stream;
    private boolean started;
    private boolean done;

    Exchange(RoutingContext ctx, long start, String label, boolean sse) {
      this.ctx = ctx;
      this.start = start;
      this.label = label;
      this.sse = sse;
    }

    @Override
    public void chunk(InferenceResponse chunk) {
      if (done) {
        return;
      }
      if (!sse) {
        for (io.kiln.pools.Tensor t : chunk.outputs()) {
          gatheredBytes += t.data().length;
        }
        if (gatheredBytes > gw.options().maxBodyBytes()) { // what generate holds is bounded as a body is
          stream.cancel();
          error(new io.kiln.pools.InferenceException(io.kiln.pools.InferenceException.Kind.TOO_LARGE,
              "the gathered answer exceeds " + gw.options().maxBodyBytes() + " bytes after " + gathered.size()
                  + " chunks; use generate_stream"));
          return;
        }
        gathered.add(chunk);
        return;
      }
      HttpServerResponse resp = ctx.response();
      if (resp.closed()) {
        return;
      }
      begin(resp);
      resp.write(Buffer.buffer("data: ").appendBuffer(GenerateCodec.chunk(chunk).toBuffer()).appendString("\n\n"));
      if (resp.writeQueueFull() && stream != null) {
        stream.pause();
        resp.drainHandler(v -> stream.resume());
      }
    }

    @Override
    public void end(Map<String, Object> parameters) {
      if (!finish("ok", "200")) {
        return;
      }
      HttpServerResponse resp = ctx.response();
      if (resp.closed()) {
        return;
      }
      if (sse) {
        begin(resp);
        resp.end();
      } else {
        resp.setStatusCode(200).putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.JSON)
            .end(GenerateCodec.gathered(gathered, model.name(), model.version(), idOf()).toBuffer());
      }
    }

    @Override
    public void error(Throwable t) {
      ErrorMapper.Failure f = gw.errors().map(t);
      if (!finish(ErrorMapper.outcome(f.kind()), Integer.toString(started ? 200 : f.httpStatus()))) {
        return;
      }
      HttpServerResponse resp = ctx.response();
      if (resp.closed() || resp.ended()) {
        return;
      }
      if (started) {
        resp.end(Buffer.buffer("event: error\ndata: ").appendBuffer(new JsonObject().put("error", f.message())
            .toBuffer()).appendString("\n\n"));
        return;
      }
      if (f.retryable()) {
        resp.putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(f.retryAfterSeconds()));
      }
      resp.setStatusCode(f.httpStatus()).putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.JSON)
          .end(new JsonObject().put("error", f.message()).toBuffer());
    }

    void clientGone() {
      if (!done && stream != null) {
        stream.cancel();
      }
      finish("cancelled", Integer.toString(HttpApi.CLIENT_CLOSED));
    }

    private void begin(HttpServerResponse resp) {
      if (!started) {
        started = true;
        resp.setStatusCode(200).setChunked(true).putHeader(HttpHeaders.CONTENT_TYPE, EVENT_STREAM)
            .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache");
      }
    }

    private String idOf() {
      return gathered.isEmpty() ? "" : gathered.get(0).id();
    }

    private boolean finish(String outcome, String code) {
      if (done) {
        return false;
      }
      done = true;
      gw.metrics().finish(start, label, sse ? "http_stream" : "http_generate", outcome, code);
      return true;
    }
  }
}
