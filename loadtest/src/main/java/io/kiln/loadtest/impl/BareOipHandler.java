package io.kiln.loadtest.impl;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.nio.charset.StandardCharsets;

/**
 * The bare server's {@code --work oip} request handler: a POST's body is decoded and answered by
 * {@link BareOipCodec} (400 with {@code {"error": ...}} if malformed, 413 if over the size limit); any other
 * method gets {@code {}} (a readiness probe). The model name in the answer is taken from a
 * {@code /v2/models/NAME/...} path, else {@code bare}. Runs on its event loop; never blocks.
 */
public final class BareOipHandler implements Handler<HttpServerRequest> {
  private static final Buffer EMPTY_OBJECT = Buffer.buffer("{}");

  private final Vertx vertx;
  private final long delayMs;
  private final long maxBodyBytes;
  private final BareOipCodec codec = new BareOipCodec();

  /** @param delayMs answer this long after the request was decoded; 0 at once */
  public BareOipHandler(Vertx vertx, long delayMs, long maxBodyBytes) {
    this.vertx = vertx;
    this.delayMs = delayMs;
    this.maxBodyBytes = maxBodyBytes;
  }

  @Override
  public void handle(HttpServerRequest req) {
    if (req.method() != HttpMethod.POST) {
      req.end().onSuccess(v -> req.response().putHeader("content-type", "application/json").end(EMPTY_OBJECT));
      return;
    }
    String length = req.getHeader("content-length");
    if (length != null && (length.length() > 18 || Long.parseLong(length.trim()) > maxBodyBytes)) {
      error(req.response(), 413, "request body exceeds the limit of " + maxBodyBytes + " bytes");
      return;
    }
    req.body().onSuccess(body -> {
      BareOipCodec.Response answer;
      try {
        BareOipCodec.Request decoded = codec.decode(body.getBytes(), req.getHeader(BareOipCodec.HEADER_LENGTH));
        answer = codec.encode(modelName(req.path()), decoded);
      } catch (BareOipCodec.BadRequest e) {
        error(req.response(), 400, e.getMessage());
        return;
      }
      if (delayMs == 0) {
        respond(req.response(), answer);
      } else {
        vertx.setTimer(delayMs, id -> respond(req.response(), answer));
      }
    });
  }

  private static void respond(HttpServerResponse resp, BareOipCodec.Response answer) {
    if (answer.binary()) {
      resp.putHeader("content-type", "application/octet-stream")
          .putHeader(BareOipCodec.HEADER_LENGTH, Integer.toString(answer.jsonLength()));
    } else {
      resp.putHeader("content-type", "application/json");
    }
    resp.end(Buffer.buffer(answer.body()));
  }

  private static void error(HttpServerResponse resp, int status, String message) {
    String json = "{\"error\":\"" + new String(JsonStringEncoder.getInstance().quoteAsString(message)) + "\"}";
    resp.setStatusCode(status).putHeader("content-type", "application/json").end(Buffer.buffer(json.getBytes(StandardCharsets.UTF_8)));
  }

  /** {@code /v2/models/NAME/infer} and {@code /v2/models/NAME/versions/V/infer} name the model. */
  static String modelName(String path) {
    String prefix = "/v2/models/";
    if (path == null || !path.startsWith(prefix)) {
      return "bare";
    }
    int end = path.indexOf('/', prefix.length());
    return end > prefix.length() ? path.substring(prefix.length(), end) : "bare";
  }
}
