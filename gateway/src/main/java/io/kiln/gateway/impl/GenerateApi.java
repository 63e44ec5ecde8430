package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceResponse;
import io.kiln.pools.ValidatedRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
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

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GenerateApi.class);
  private static final String GENERATE = "http_generate";
  private static final String STREAM = "http_stream";
  private static final String OK = "200";

  private final GatewayContext gw;
  private final StreamDispatcher streams;
  private final Events gathered = new Events(false);
  private final Events streamed = new Events(true);

  GenerateApi(GatewayContext gw, StreamDispatcher streams) {
    this.gw = gw;
    this.streams = streams;
  }

  /** Adds the routes to the OIP router. */
  void register(Router r) {
    io.vertx.core.Handler<RoutingContext> body = ExpectContinue.body(gw.options().maxBodyBytes());
    for (String prefix : List.of("/v2/models/:model", "/v2/models/:model/versions/:version")) {
      r.post(prefix + "/generate").handler(body).handler(ctx -> generate(ctx, false));
      r.post(prefix + "/generate_stream").handler(body).handler(ctx -> generate(ctx, true));
    }
  }

  private void generate(RoutingContext ctx, boolean sse) {
    String name = ctx.pathParam("model");
    HttpServerRequest req = ctx.request();
    GatewayTrace trace = GatewayTrace.start(gw.spans(), req.getHeader(GatewayTrace.TRACEPARENT),
        req.getHeader(GatewayTrace.TRACESTATE), sse ? STREAM : GENERATE);
    FrontExchange<Answer, Void> ex = new FrontExchange<>(gw, sse ? streamed : gathered, new Answer(ctx.response()),
        gw.models().label(name), trace);
    try {
      ModelInfo model = gw.models().findReady(name, ctx.pathParam("version"));
      ValidatedRequest request = GenerateCodec.decode(model, ctx.body().buffer());
      Hints hints = Hints.from(req.getHeader(Hints.NODE_HEADER), req.getHeader(Hints.TIMEOUT_HEADER),
          -1, request.request().parameters(), gw.locator());
      ex.channel().model = model;
      ex.open(streams, model, request, hints);
    } catch (RuntimeException e) {
      ex.fail(e);
      return;
    }
    if (!ctx.response().ended()) { // a pool that answered at once has already ended it (Vert.x then refuses handlers)
      ctx.response().closeHandler(v -> ex.clientGone());
    }
  }

  /** One generate call's response and what it wrote or gathered so far. */
  private static final class Answer {
    final HttpServerResponse resp;
    final List<InferenceResponse> gathered = new ArrayList<>(); // generate: the chunks so far
    long gatheredBytes;
    ModelInfo model;
    boolean started; // generate_stream: the first event is written

    Answer(HttpServerResponse resp) {
      this.resp = resp;
    }

    void begin() {
      if (!started) {
        started = true;
        resp.setStatusCode(200).setChunked(true).putHeader(HttpHeaders.CONTENT_TYPE, EVENT_STREAM)
            .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache");
      }
    }
  }

  /** generate (the chunks gathered into one JSON answer) or generate_stream (one event per chunk). */
  private final class Events extends FrontExchange.Protocol<Answer, Void> {
    private final boolean sse;

    Events(boolean sse) {
      super(sse ? STREAM : GENERATE, LOG, OK, Integer.toString(HttpApi.CLIENT_CLOSED));
      this.sse = sse;
    }

    @Override
    String code(Answer a, ErrorMapper.Failure f) {
      return a.started ? OK : Integer.toString(f.httpStatus());
    }

    @Override
    void traceparent(Answer a, String traceparent) {
      a.resp.putHeader(GatewayTrace.TRACEPARENT, traceparent);
    }

    @Override
    void chunk(FrontExchange<Answer, Void> ex, InferenceResponse chunk) {
      Answer a = ex.channel();
      if (!sse) {
        for (io.kiln.pools.Tensor t : chunk.outputs()) {
          a.gatheredBytes += t.data().length;
        }
        if (a.gatheredBytes > gw.options().maxBodyBytes()) { // what generate holds is bounded as a body is
          ex.cancel("the gathered answer exceeds the body limit"); // the token withdraws the stream
          ex.fail(new InferenceException(InferenceException.Kind.TOO_LARGE, "the gathered answer exceeds "
              + gw.options().maxBodyBytes() + " bytes after " + a.gathered.size() + " chunks; use generate_stream"));
          return;
        }
        a.gathered.add(chunk);
        return;
      }
      HttpServerResponse resp = a.resp;
      if (resp.closed()) {
        return;
      }
      a.begin();
      resp.write(Buffer.buffer("data: ").appendBuffer(GenerateCodec.chunk(chunk).toBuffer()).appendString("\n\n"));
      ex.pauseWhileFull(resp);
    }

    @Override
    void ended(FrontExchange<Answer, Void> ex, Map<String, Object> parameters) {
      ex.reply(null);
    }

    @Override
    void answer(Answer a, Void none) {
      HttpServerResponse resp = a.resp;
      if (resp.closed()) {
        return;
      }
      if (sse) {
        a.begin();
        resp.end();
      } else {
        String id = a.gathered.isEmpty() ? "" : a.gathered.get(0).id();
        resp.setStatusCode(200).putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.JSON)
            .end(GenerateCodec.gathered(a.gathered, a.model.name(), a.model.version(), id).toBuffer());
      }
    }

    @Override
    void error(Answer a, ErrorMapper.Failure f) {
      HttpServerResponse resp = a.resp;
      if (resp.closed() || resp.ended()) {
        return;
      }
      if (a.started) {
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
  }
}
