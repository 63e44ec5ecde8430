package io.kiln.gateway.impl;

import io.kiln.gateway.ModelInfo;
import io.kiln.gateway.impl.JsonResponseEncoder.Encoded;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Predicate;

/**
 * OIP v2 inference over HTTP: {@code POST /v2/models/{name}[/versions/{version}]/infer}, served straight from the
 * server's request handler. {@link #handle} recognises the path itself, gathers the body under the same limit
 * and read clock as the router's body handler did, and answers on the connection's own context; every other
 * request, and any infer path not in its plain form (dot segments, empty or undecodable segments, a trailing
 * slash), it leaves to the vertx-web router, which serves it as before. The router, its routing context and its
 * body handler cost ≈6 % of an identity request's event-loop samples.
 *
 * <p>As the server's request handler it also answers every request's {@code Expect} first: an unknown expectation
 * is 417 before any route sees it; {@code 100 Continue} is sent once the declared length is within the limit (a
 * declared body over it is 413 unsent, and closes the connection), as {@link ExpectContinue} sets out.
 *
 * <p>Handlers run on the event loop and never block: decoding or encoding a large body runs on a worker thread.
 */
final class HttpInfer implements Handler<HttpServerRequest> {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(HttpInfer.class);

  private static final String PREFIX = "/v2/models/";
  private static final String SUFFIX = "/infer";
  private static final String VERSIONS = "/versions/";

  private final Vertx vertx;
  private final GatewayContext gw;
  private final ReadDeadlines deadlines;
  private final Handler<HttpServerRequest> others;
  private final Answers answers = new Answers();

  /** @param others serves every request that is not a plain infer path (the router) */
  HttpInfer(Vertx vertx, GatewayContext gw, ReadDeadlines deadlines, Handler<HttpServerRequest> others) {
    this.vertx = vertx;
    this.gw = gw;
    this.deadlines = deadlines;
    this.others = others;
  }

  @Override
  public void handle(HttpServerRequest req) {
    String unmet = ExpectContinue.unmet(req);
    if (unmet != null) {
      expectationFailed(req, unmet);
      return;
    }
    String[] target = HttpMethod.POST.equals(req.method()) ? target(req.path()) : null;
    if (target == null) {
      others.handle(req);
      return;
    }
    deadlines.requestStarted(req, answered -> req.response().endHandler(v -> answered.run()));
    new Body(req, target[0], target[1]).start();
  }

  /**
   * 417 for an expectation the server cannot meet ({@link ExpectContinue}), before any route sees the request: in
   * OpenAI's error shape under {@code /v1/}, the OIP {@code {"error": ...}} elsewhere.
   */
  private void expectationFailed(HttpServerRequest req, String unmet) {
    deadlines.requestStarted(req, answered -> req.response().endHandler(v -> answered.run()));
    String message = "Expect: " + unmet + " cannot be met; the only expectation served is 100-continue";
    String path = req.path();
    Buffer body = path != null && path.startsWith("/v1/") ? OpenAiError.buffer(417, message, null, null)
        : gw.encoder().object(Map.of("error", message));
    boolean close = ExpectContinue.closeBeforeBody(req);
    send(req.response(), 417, body);
    if (close) {
      ExpectContinue.close(req);
    }
  }

  /**
   * {@code [name, version or null]} of a plain infer path, its segments percent-decoded as the router decodes
   * its path parameters; null for anything else.
   */
  static String[] target(String path) {
    if (path == null || !path.startsWith(PREFIX) || !path.endsWith(SUFFIX)) {
      return null;
    }
    int from = PREFIX.length();
    int end = path.length() - SUFFIX.length();
    if (end <= from) {
      return null;
    }
    int slash = path.indexOf('/', from);
    if (slash == end) {
      String name = segment(path, from, end);
      return name == null ? null : new String[] {name, null};
    }
    if (!path.startsWith(VERSIONS, slash)) {
      return null;
    }
    int versionFrom = slash + VERSIONS.length();
    if (versionFrom >= end || path.indexOf('/', versionFrom) != end) {
      return null;
    }
    String name = segment(path, from, slash);
    String version = segment(path, versionFrom, end);
    return name == null || version == null ? null : new String[] {name, version};
  }

  /** One path segment percent-decoded (UTF-8, '+' kept); null if empty, a dot segment or not plain ASCII. */
  private static String segment(String path, int from, int to) {
    boolean plain = true;
    for (int i = from; i < to && plain; i++) {
      char c = path.charAt(i);
      plain = c != '%' && c < 0x80;
    }
    String s = plain ? path.substring(from, to) : decode(path, from, to);
    return s == null || s.isEmpty() || s.equals(".") || s.equals("..") ? null : s;
  }

  private static String decode(String path, int from, int to) {
    byte[] out = new byte[to - from];
    int n = 0;
    for (int i = from; i < to; i++) {
      char c = path.charAt(i);
      if (c == '%') {
        if (i + 2 >= to) {
          return null;
        }
        int hi = Character.digit(path.charAt(i + 1), 16);
        int lo = Character.digit(path.charAt(i + 2), 16);
        if (hi < 0 || lo < 0) {
          return null;
        }
        out[n++] = (byte) (hi << 4 | lo);
        i += 2;
      } else if (c < 0x80) {
        out[n++] = (byte) c;
      } else {
        return null; // not as a client encodes a path: the router's to judge
      }
    }
    try {
      return java.nio.charset.StandardCharsets.UTF_8.newDecoder()
          .decode(java.nio.ByteBuffer.wrap(out, 0, n)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      return null;
    }
  }

  /** Gathers one request's body within the limit, then serves it; all on the connection's event loop. */
  private final class Body {
    private final HttpServerRequest req;
    private final String name;
    private final String version;
    private final long limit = gw.options().maxBodyBytes();
    private Buffer first; // the body while it is one chunk: kept as Vert.x copied it off the socket
    private Buffer all;
    private long size;
    private boolean tooLarge;

    Body(HttpServerRequest req, String name, String version) {
      this.req = req;
      this.name = name;
      this.version = version;
    }

    void start() {
      String declared = req.getHeader(HttpHeaders.CONTENT_LENGTH);
      long length = -1;
      if (declared != null) {
        try {
          length = Long.parseLong(declared.trim());
        } catch (NumberFormatException e) {
          length = -1; // Netty refuses a malformed length before this; counted as sent, then
        }
      }
      if (length > limit) {
        // Refused unread, and uninvited: a client waiting for 100 Continue holds the body, so the connection closes.
        boolean close = ExpectContinue.closeBeforeBody(req);
        tooLarge();
        if (close) {
          ExpectContinue.close(req);
        }
        return;
      }
      if (req.isEnded()) {
        infer(req, name, version, Buffer.buffer());
        return;
      }
      long expected = length;
      // A client gone mid-body: nothing was started; the connection's close ends its read clock.
      req.exceptionHandler(e -> LOG.debug("request body to {} not read: {}", name, e.toString()));
      req.handler(chunk -> {
        if (tooLarge) {
          return;
        }
        size += chunk.length();
        if (size > limit) {
          first = null;
          all = null;
          tooLarge();
        } else if (first == null && all == null) {
          first = chunk;
        } else {
          if (all == null) {
            all = Buffer.buffer((int) Math.max(expected, size));
            all.appendBuffer(first);
            first = null;
          }
          all.appendBuffer(chunk);
        }
      });
      req.endHandler(v -> {
        if (!tooLarge) {
          infer(req, name, version, all != null ? all : first != null ? first : Buffer.buffer());
        }
      });
      ExpectContinue.invite(req); // within the limit as declared (or chunked): 100 Continue to a client waiting
    }

    private void tooLarge() {
      tooLarge = true;
      gw.metrics().finish(gw.metrics().start(), gw.models().label(name), "http", "too_large", "413");
      error(gw, req.response(), 413, "request body exceeds the limit of " + limit + " bytes");
    }
  }

  /** Serves one infer request whose body is in; {@code version} null for the serving one. */
  void infer(HttpServerRequest req, String name, String version, Buffer body) {
    GatewayTrace trace = GatewayTrace.start(gw.spans(), req.getHeader(GatewayTrace.TRACEPARENT),
        req.getHeader(GatewayTrace.TRACESTATE), "http");
    FrontExchange<HttpServerResponse, Encoded> ex = new FrontExchange<>(gw, answers, req.response(),
        gw.models().label(name), trace);
    req.response().closeHandler(v -> ex.clientGone());
    ModelInfo model;
    try {
      model = gw.models().findReady(name, version);
    } catch (RuntimeException e) {
      ex.fail(e);
      return;
    }
    String headerLength = req.getHeader(HttpInferDecoder.HEADER_LENGTH);
    long bodyBytes = body == null ? 0 : body.length();
    if (!FrontExchange.offloads(bodyBytes) && SharedMemoryTensors.mayReference(body)) {
      bodyBytes = FrontExchange.OFFLOAD_BYTES + 1L; // inputs copied out of shared memory: as large a job
    }
    offload(bodyBytes, () -> gw.httpDecoder().decode(model, body, headerLength))
        .compose(decoded -> {
          Predicate<String> binary = decoded.header().binaryOutputs();
          Hints hints = Hints.from(req.getHeader(Hints.NODE_HEADER), req.getHeader(Hints.TIMEOUT_HEADER),
              -1, decoded.header().parameters(), gw.locator());
          return ex.dispatch(model, decoded.request(), hints).compose(response ->
              offload(FrontExchange.outputBytes(response), () -> encode(response, decoded, binary)));
        })
        .onSuccess(ex::reply)
        .onFailure(ex::fail);
  }

  /** The JSON answer, after writing the outputs the request asked for in shared memory into their regions. */
  private Encoded encode(io.kiln.pools.InferenceResponse response, DecodedRequest decoded, Predicate<String> binary) {
    Map<String, SharedMemoryTensors.Written> shared = SharedMemoryTensors.write(response, decoded.header().outputs(),
        gw.sharedMemory());
    return shared.isEmpty() ? gw.encoder().infer(response, binary) : InferResponseWriter.write(response, binary, shared);
  }

  private <T> Future<T> offload(long bytes, Callable<T> work) {
    return FrontExchange.offload(vertx, gw.metrics(), "http", bytes, work);
  }

  static void fail(GatewayContext gw, HttpServerResponse resp, ErrorMapper.Failure f) {
    if (f.retryable()) {
      resp.putHeader(HttpHeaders.RETRY_AFTER, Integer.toString(f.retryAfterSeconds()));
    }
    error(gw, resp, f.httpStatus(), f.message());
  }

  static void error(GatewayContext gw, HttpServerResponse resp, int status, String message) {
    send(resp, status, gw.encoder().object(Map.of("error", message)));
  }

  static void send(HttpServerResponse resp, int status, Buffer json) {
    if (resp.ended() || resp.closed()) {
      return;
    }
    resp.setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.JSON).end(json);
  }

  /** How an infer request over HTTP is answered: JSON, or binary tensor data after its JSON header. */
  private final class Answers extends FrontExchange.Protocol<HttpServerResponse, Encoded> {
    Answers() {
      super("http", LOG, "200", Integer.toString(HttpApi.CLIENT_CLOSED));
    }

    @Override
    String code(HttpServerResponse resp, ErrorMapper.Failure f) {
      return Integer.toString(f.httpStatus());
    }

    @Override
    void traceparent(HttpServerResponse resp, String traceparent) {
      resp.putHeader(GatewayTrace.TRACEPARENT, traceparent);
    }

    @Override
    void answer(HttpServerResponse resp, Encoded encoded) {
      if (resp.closed()) {
        return;
      }
      resp.setStatusCode(200);
      if (encoded.binary()) {
        resp.putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.OCTETS)
            .putHeader(HttpInferDecoder.HEADER_LENGTH, Integer.toString(encoded.jsonLength()));
      } else {
        resp.putHeader(HttpHeaders.CONTENT_TYPE, HttpApi.JSON);
      }
      SlicedBody.end(resp, encoded.body()); // an MB-sized answer in slices: see SlicedBody
    }

    @Override
    void error(HttpServerResponse resp, ErrorMapper.Failure f) {
      HttpInfer.fail(gw, resp, f);
    }
  }
}
