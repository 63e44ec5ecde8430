package io.kiln.gateway.impl;

import io.kiln.gateway.BearerToken;
import io.kiln.gateway.ModelInfo;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceRequest;
import io.kiln.pools.Tensor;
import io.kiln.pools.TextModels;
import io.kiln.pools.ValidatedRequest;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * OpenAI's API on the HTTP port, for the models that keep a {@link TextModels} contract (whatever their engine):
 * {@code GET /v1/models[/{id}]}, {@code POST /v1/completions}, {@code /v1/chat/completions} (see
 * {@link OpenAiCompletions}) and {@code /v1/embeddings} ({@link OpenAiEmbeddings}). Requests are read by
 * {@link OpenAiRequests} into the contract's tensor and parameters and then take the paths every protocol takes: a
 * generation is a stream opened by the {@link StreamDispatcher} (its deadline, locality hint, stream limit and
 * cancellation as {@code generate_stream}'s), an embedding one request through the {@link Dispatcher}; each is one
 * {@link FrontExchange}, recorded once under protocol {@value #PROTOCOL}. Every error has OpenAI's shape
 * ({@link OpenAiError}), its status as {@link ErrorMapper} gives it (503 keeps its Retry-After).
 *
 * <p>With {@link io.kiln.gateway.GatewayOptions#apiKey()} set, every {@code /v1/} request must carry
 * {@code Authorization: Bearer <key>} (compared in constant time), else 401. Handlers run on the event loop; a body
 * above {@link FrontExchange#OFFLOAD_BYTES} is read on a worker thread.
 */
final class OpenAiApi {

  static final String PROTOCOL = "openai";
  /** The contract's parameters a model may refuse by name; OpenAI's fields of the same names. */
  private static final java.util.List<String> MODEL_PARAMETERS = java.util.List.of(io.kiln.pools.TextModels.MAX_TOKENS,
      io.kiln.pools.TextModels.TEMPERATURE, io.kiln.pools.TextModels.TOP_P, io.kiln.pools.TextModels.TOP_K,
      io.kiln.pools.TextModels.SEED, io.kiln.pools.TextModels.STOP);
  static final String OK = "200";

  /** A response and what a refusal named, for the error it becomes. */
  static class Channel {
    final HttpServerResponse resp;
    String param;
    String code;

    Channel(HttpServerResponse resp) {
      this.resp = resp;
    }

    /** The request field the model's text input came from ({@code prompt}, {@code messages}, {@code input}). */
    String textField() {
      return "input";
    }

    /**
     * The request field a model's own refusal names: its message starts with the contract's tensor or parameter
     * (a decoder's {@code text_input: the prompt has 600 tokens ...}, {@code max_tokens: ...}); null when none.
     */
    String fieldOf(String message) {
      if (message == null) {
        return null;
      }
      if (message.startsWith(io.kiln.pools.TextModels.TEXT_INPUT + ":")) {
        return textField();
      }
      for (String p : MODEL_PARAMETERS) {
        if (message.startsWith(p + ":")) {
          return p;
        }
      }
      return null;
    }

    /** Keeps what an {@link OpenAiError} names, for the answer {@link FrontExchange#fail} then writes. */
    void refused(Throwable t) {
      if (io.kiln.runtime.Futures.unwrap(t) instanceof OpenAiError e) {
        param = e.param();
        code = e.code();
      }
    }
  }

  private final GatewayContext gw;
  private final StreamDispatcher streams;
  private final BearerToken apiKey;
  private final LongSupplier epochMillis;
  private final long startedSeconds;
  private final OpenAiCompletions completions;
  private final OpenAiEmbeddings embeddings = new OpenAiEmbeddings();

  /** @param epochMillis the wall clock of {@code created} */
  OpenAiApi(GatewayContext gw, StreamDispatcher streams, LongSupplier epochMillis) {
    this.gw = gw;
    this.streams = streams;
    this.apiKey = new BearerToken(gw.options().apiKey());
    this.epochMillis = epochMillis;
    this.startedSeconds = epochMillis.getAsLong() / 1000;
    this.completions = new OpenAiCompletions(gw.options().maxBodyBytes());
  }

  /** Adds the routes to the HTTP router. */
  void register(Router r) {
    io.vertx.core.Handler<RoutingContext> body = ExpectContinue.body(gw.options().maxBodyBytes());
    // Failures (a body over the limit above all) are answered in OpenAI's shape: ahead of the router's OIP handler.
    r.route("/v1/*").order(-2).failureHandler(this::failure);
    r.route("/v1/*").handler(this::authorise);
    r.get("/v1/models").handler(this::list);
    r.get("/v1/models/:model").handler(this::retrieve);
    r.post("/v1/completions").handler(body).handler(ctx -> text(ctx, false));
    r.post("/v1/chat/completions").handler(body).handler(ctx -> text(ctx, true));
    r.post("/v1/embeddings").handler(body).handler(this::embed);
    r.route("/v1/*").handler(ctx -> error(ctx.response(), 404, "Invalid URL (" + ctx.request().method() + " "
        + ctx.request().path() + ")", null, null));
  }

  private void authorise(RoutingContext ctx) {
    if (apiKey.accepts(ctx.request().getHeader(HttpHeaders.AUTHORIZATION))) {
      ctx.next();
      return;
    }
    if (ctx.request().method() == HttpMethod.POST) { // an inference request refused: counted as a client's error
      gw.metrics().finish(gw.metrics().start(), GatewayMetrics.UNKNOWN_MODEL, PROTOCOL, "invalid", "401");
    }
    ctx.response().putHeader("WWW-Authenticate", "Bearer");
    error(ctx.response(), 401, "Incorrect or missing API key: send Authorization: Bearer <key>", null,
        OpenAiError.INVALID_API_KEY);
  }

  private void failure(RoutingContext ctx) {
    if (ctx.statusCode() == 413) {
      gw.metrics().finish(gw.metrics().start(), GatewayMetrics.UNKNOWN_MODEL, PROTOCOL, "too_large", "413");
      error(ctx.response(), 413, "request body exceeds the limit of " + gw.options().maxBodyBytes() + " bytes",
          null, "request_too_large");
    } else if (ctx.failure() != null) {
      send(new Channel(ctx.response()), gw.errors().map(ctx.failure()));
    } else {
      int status = ctx.statusCode() > 0 ? ctx.statusCode() : 500;
      error(ctx.response(), status, status == 400 ? "bad request" : "request failed", null, null);
    }
  }

  /** The ready models that keep a text contract; never an internal one. */
  private void list(RoutingContext ctx) {
    JsonArray data = new JsonArray();
    for (ModelInfo m : gw.models().listed()) {
      if (m.ready() && keepsAContract(m)) {
        data.add(model(m));
      }
    }
    HttpInfer.send(ctx.response(), 200, new JsonObject().put("object", "list").put("data", data).toBuffer());
  }

  private void retrieve(RoutingContext ctx) {
    String name = ctx.pathParam("model");
    try {
      ModelInfo m = gw.models().find(name, null);
      if (gw.models().internal(m.name()) || !keepsAContract(m)) {
        throw InferenceException.notFound("model '" + name + "' not found (GET /v1/models lists the models here)");
      }
      HttpInfer.send(ctx.response(), 200, model(gw.models().findReady(name, null)).toBuffer());
    } catch (RuntimeException e) {
      send(new Channel(ctx.response()), gw.errors().map(e));
    }
  }

  private JsonObject model(ModelInfo m) {
    // Deployments carry no creation time the gateway knows: the gateway's start stands in for it.
    return new JsonObject().put("id", m.name()).put("object", "model").put("created", startedSeconds)
        .put("owned_by", "kiln");
  }

  /**
   * The request's parameters with its session ({@value io.kiln.pools.PrefixAffinity#SESSION_HEADER} header), which
   * keeps a conversation on the node and worker that hold its KV cache.
   */
  static Map<String, Object> session(HttpServerRequest req, Map<String, Object> parameters) {
    String session = req.getHeader(io.kiln.pools.PrefixAffinity.SESSION_HEADER);
    if (session == null || session.isBlank()) {
      return parameters;
    }
    Map<String, Object> p = new java.util.LinkedHashMap<>(parameters);
    p.put(io.kiln.pools.PrefixAffinity.SESSION_PARAMETER, session.length() > 256 ? session.substring(0, 256) : session);
    return p;
  }

  private static boolean keepsAContract(ModelInfo m) {
    return TextModels.generates(m.signature()) || TextModels.embeds(m.signature());
  }

  private void text(RoutingContext ctx, boolean chat) {
    HttpServerRequest req = ctx.request();
    String id = (chat ? "chatcmpl-" : "cmpl-") + newId();
    OpenAiCompletions.Answer a = new OpenAiCompletions.Answer(ctx.response(), chat, id, epochMillis.getAsLong() / 1000);
    FrontExchange<OpenAiCompletions.Answer, Void> ex = exchange(req, completions, a);
    read(ctx, ex, json -> OpenAiRequests.text(json, chat)).onComplete(ar -> {
      if (ar.failed()) {
        refuse(ex, a, ar.cause());
        return;
      }
      OpenAiRequests.Text call = ar.result();
      try {
        a.model = call.model();
        a.stream = call.stream();
        a.includeUsage = call.includeUsage();
        ModelInfo model = textModel(call.model(), true);
        ValidatedRequest request = validate(model, id, List.of(call.textInput()), session(req, call.parameters()));
        if (!ex.done()) { // the client may have gone while a large body was read
          ex.open(streams, model, request, hints(req));
        }
      } catch (RuntimeException e) {
        refuse(ex, a, e);
      }
    });
  }

  private void embed(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    OpenAiEmbeddings.Answer a = new OpenAiEmbeddings.Answer(ctx.response());
    FrontExchange<OpenAiEmbeddings.Answer, Buffer> ex = exchange(req, embeddings, a);
    read(ctx, ex, OpenAiRequests::embed).compose(call -> {
      ModelInfo model = textModel(call.model(), false);
      int declared = OpenAiEmbeddings.declaredDimensions(model);
      if (call.dimensions() > 0 && declared > 0 && declared != call.dimensions()) {
        throw OpenAiEmbeddings.dimensions(model.name(), declared, call.dimensions());
      }
      if (model.maxBatchSize() > 0 && call.inputs().size() > model.maxBatchSize()) {
        throw OpenAiError.invalid("input", "model '" + model.name() + "' takes at most " + model.maxBatchSize()
            + " inputs per request, got " + call.inputs().size());
      }
      ValidatedRequest request = validate(model, "emb-" + newId(), call.inputs(), Map.of());
      return ex.dispatch(model, request, hints(req)).compose(r -> FrontExchange.offload(ctx.vertx(), gw.metrics(),
          PROTOCOL, FrontExchange.outputBytes(r), () -> OpenAiEmbeddings.encode(r, call, model.name())));
    }).onSuccess(ex::reply).onFailure(e -> refuse(ex, a, e));
  }

  private <C extends Channel, A> FrontExchange<C, A> exchange(HttpServerRequest req, FrontExchange.Protocol<C, A> p,
                                                               C channel) {
    GatewayTrace trace = GatewayTrace.start(gw.spans(), req.getHeader(GatewayTrace.TRACEPARENT),
        req.getHeader(GatewayTrace.TRACESTATE), PROTOCOL);
    FrontExchange<C, A> ex = new FrontExchange<>(gw, p, channel, GatewayMetrics.UNKNOWN_MODEL, trace);
    req.response().closeHandler(v -> ex.clientGone()); // from the start: a large body is read off the loop
    return ex;
  }

  /**
   * Reads the body's fields with {@code fields}, on a worker thread when the body is large (the one offload rule),
   * and names the exchange's model as soon as the body does, so that a refusal of another field is recorded under it.
   */
  private <T> Future<T> read(RoutingContext ctx, FrontExchange<?, ?> ex, Function<JsonObject, T> fields) {
    Buffer body = ctx.body().buffer();
    return FrontExchange.offload(ctx.vertx(), gw.metrics(), PROTOCOL, body == null ? 0 : body.length(), () -> {
      JsonObject json = OpenAiFields.object(body);
      String model = json.getValue("model") instanceof String name ? name : null;
      try {
        return new Read<>(model, fields.apply(json), null);
      } catch (RuntimeException e) {
        return new Read<T>(model, null, e);
      }
    }).compose(read -> {
      if (read.model() != null) {
        ex.model(gw.models().label(read.model()));
      }
      return read.refusal() != null ? Future.failedFuture(read.refusal()) : Future.succeededFuture(read.call());
    });
  }

  private record Read<T>(String model, T call, RuntimeException refusal) {
  }

  private static <C extends Channel> void refuse(FrontExchange<C, ?> ex, C channel, Throwable t) {
    channel.refused(t);
    ex.fail(t);
  }

  /**
   * The model a request names, ready, keeping the contract it needs ({@code generation}: text generation, else
   * embedding); a model that exists but keeps another is refused naming {@code model}.
   */
  private ModelInfo textModel(String name, boolean generation) {
    ModelInfo m = gw.models().find(name, null);
    boolean keeps = generation ? TextModels.generates(m.signature()) : TextModels.embeds(m.signature());
    if (!keeps) {
      throw OpenAiError.invalid("model", "model '" + name + "' is not a " + (generation
          ? "text generation model (a streaming model of text_input in, text_output chunks out; docs/openai.md)"
          : "text embedding model (a model of text_input in, embedding and prompt_tokens out; docs/openai.md)"));
    }
    return gw.models().findReady(name, null);
  }

  private static ValidatedRequest validate(ModelInfo model, String id, List<String> texts, Map<String, Object> params) {
    List<byte[]> rows = new ArrayList<>(texts.size());
    for (String t : texts) {
      rows.add(t.getBytes(StandardCharsets.UTF_8));
    }
    Tensor input = Tensor.ofBytes(TextModels.TEXT_INPUT, new long[] {rows.size()}, rows);
    return new io.kiln.pools.RequestValidator(model.name(), model.signature(), model.maxBatchSize())
        .validate(new InferenceRequest(id, List.of(input), List.of(), params));
  }

  /** The locality and timeout headers, as every protocol reads them; the body names no Kiln parameters. */
  private Hints hints(HttpServerRequest req) {
    return Hints.from(req.getHeader(Hints.NODE_HEADER), req.getHeader(Hints.TIMEOUT_HEADER), -1, Map.of(),
        gw.locator());
  }

  private static String newId() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return Long.toHexString(r.nextLong() | Long.MIN_VALUE) + Long.toHexString(r.nextLong() | Long.MIN_VALUE);
  }

  /** A failure's OpenAI error body: the channel's {@code param} and {@code code}, else the status's. */
  static JsonObject errorBody(Channel c, ErrorMapper.Failure f) {
    int status = f.httpStatus();
    String param = c.param != null ? c.param : status == 404 ? "model" : status == 400 ? c.fieldOf(f.message()) : null;
    String code = c.code != null ? c.code : OpenAiError.defaultCode(status);
    return OpenAiError.body(status, f.message(), param, code);
  }

  /** Answers a failure with its status (and Retry-After when it is retryable). */
  static void send(Channel c, ErrorMapper.Failure f) {
    if (f.retryable()) {
      c.resp.putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(f.retryAfterSeconds()));
    }
    HttpInfer.send(c.resp, f.httpStatus(), errorBody(c, f).toBuffer());
  }

  private static void error(HttpServerResponse resp, int status, String message, String param, String code) {
    HttpInfer.send(resp, status, OpenAiError.buffer(status, message, param, code));
  }
}
