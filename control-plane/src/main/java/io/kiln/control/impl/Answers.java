package io.kiln.control.impl;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.gateway.BearerToken;
import io.kiln.pipelines.PipelineException;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.Problem;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.PlatformHandler;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * How every control-plane REST API answers (the management, pipelines, jobs, repository, dashboard and logs APIs), so
 * that they answer alike, as DJL Serving's management and inference handlers both answer through one
 * {@code NettyUtils}:
 * <ul>
 *   <li>a JSON answer: {@code Content-Type: application/json}, the body as {@link WireCodec#toJson} writes it;</li>
 *   <li>an error: {@code {"error": "..."}} (a null message reads {@code request failed});</li>
 *   <li>400 with {@code problems}: {@code {"error": "N problem(s) in <file>; <outcome>", "problems": [{file, line,
 *       column, path, message}]}};</li>
 *   <li>401 without the management token, with {@code WWW-Authenticate: Bearer}, checked before a body is read;</li>
 *   <li>503 with {@code Retry-After}: a write refused below the minimum cluster size, a pipeline or job refused
 *       because the node is full ({@value #QUORUM_RETRY_AFTER_SECONDS} s), or whatever the caller says.</li>
 * </ul>
 * An answer to a request already answered, or whose client has gone, is dropped. Event-loop only; nothing blocks.
 */
public final class Answers {

  /**
   * What a write refused below the minimum cluster size tells the caller to wait: about one failure detection. The
   * pipelines and jobs APIs answer a node that cannot take more with it too.
   */
  public static final long QUORUM_RETRY_AFTER_SECONDS = 5;

  /** The 401's message. */
  static final String UNAUTHORIZED = "management API needs a valid token (Authorization: Bearer ...)";

  private static final ObjectMapper JSON = WireCodec.json();
  private static final PlatformHandler RAW_BODY = new RawBody();

  private Answers() {
  }

  /** {@code status} with {@code body} as JSON; nothing if the request was answered or its client went. */
  public static void json(RoutingContext ctx, int status, Object body) {
    HttpServerResponse response = ctx.response();
    if (response.ended() || response.closed()) {
      return;
    }
    response.setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
        .end(WireCodec.toJson(body));
  }

  /** {@code status} with {@code {"error": message}} ({@code request failed} when {@code message} is null). */
  public static void error(RoutingContext ctx, int status, String message) {
    json(ctx, status, Map.of("error", message == null ? "request failed" : message));
  }

  /** Sets {@code Retry-After} to {@code seconds} on an answer about to be sent. */
  public static void retryAfter(RoutingContext ctx, long seconds) {
    if (!ctx.response().ended() && !ctx.response().closed()) {
      ctx.response().putHeader("Retry-After", Long.toString(seconds));
    }
  }

  /** 503 with {@code Retry-After: seconds} and {@code {"error": message}}. */
  public static void unavailable(RoutingContext ctx, long seconds, String message) {
    retryAfter(ctx, seconds);
    error(ctx, 503, message);
  }

  /**
   * Split-brain protection refused the write: this node is on the smaller side of a partition (or the cluster is short
   * of members). 503 with Retry-After, the message naming the sizes; nothing was written.
   */
  public static void belowMinimum(RoutingContext ctx, Throwable refusal) {
    unavailable(ctx, QUORUM_RETRY_AFTER_SECONDS, refusal.getMessage());
  }

  /** A pipeline or job refused as its kind says (404, 400, 503 with Retry-After, ...), its message as the error. */
  public static void refused(RoutingContext ctx, PipelineException p) {
    if (p.kind().httpStatus() == 503) {
      retryAfter(ctx, QUORUM_RETRY_AFTER_SECONDS);
    }
    error(ctx, p.kind().httpStatus(), p.getMessage());
  }

  /**
   * 400 listing {@code problems}, with the error {@code "N problem(s) in <file>; <outcome>"}.
   *
   * @param file e.g. {@code the deployment file}
   * @param outcome e.g. {@code nothing was applied}
   */
  public static void problems(RoutingContext ctx, String file, String outcome, List<Problem> problems) {
    ObjectNode o = JSON.createObjectNode();
    o.put("error", problems.size() + " problem(s) in " + file + "; " + outcome);
    ArrayNode list = o.putArray("problems");
    for (Problem p : problems) {
      list.addObject().put("file", p.file()).put("line", p.line()).put("column", p.column())
          .put("path", p.path()).put("message", p.message());
    }
    json(ctx, 400, o);
  }

  /** The status a failure handler answers: the one the route failed with, else 500. */
  public static int failureStatus(RoutingContext ctx) {
    return ctx.statusCode() > 0 ? ctx.statusCode() : 500;
  }

  /**
   * The management token's check: a request without {@code Authorization: Bearer <token>} gets 401 (compared in
   * constant time); without a token configured ({@code token} null or empty) every request passes.
   */
  public static Handler<RoutingContext> authorize(String token) {
    BearerToken check = new BearerToken(token);
    return ctx -> {
      if (check.accepts(ctx.request().getHeader(HttpHeaders.AUTHORIZATION))) {
        ctx.next();
      } else {
        ctx.response().putHeader("WWW-Authenticate", "Bearer");
        error(ctx, 401, UNAUTHORIZED);
      }
    };
  }

  /** A completion callback that answers 500 instead of leaving the request hanging if {@code body} throws. */
  public static <T> BiConsumer<T, Throwable> guarded(RoutingContext ctx, BiConsumer<T, Throwable> body) {
    return (value, err) -> {
      try {
        body.accept(value, err);
      } catch (RuntimeException e) {
        error(ctx, 500, "request failed: " + e);
      }
    };
  }

  /**
   * Drops a form content type so the body handler keeps the body whole (a platform handler: it runs before it): a
   * YAML body is YAML whatever it is labelled, and {@code curl -d} labels it a form, which Vert.x would parse into
   * form fields (and fail on one longer than its form-attribute limit).
   */
  public static PlatformHandler rawBody() {
    return RAW_BODY;
  }

  private static final class RawBody implements PlatformHandler {
    @Override
    public void handle(RoutingContext ctx) {
      String type = ctx.request().getHeader(HttpHeaders.CONTENT_TYPE);
      if (type != null && (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/"))) {
        ctx.request().headers().remove(HttpHeaders.CONTENT_TYPE);
      }
      ctx.next();
    }
  }
}
