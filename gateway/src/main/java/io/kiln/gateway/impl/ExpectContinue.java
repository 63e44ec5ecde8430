package io.kiln.gateway.impl;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.List;

/**
 * HTTP/1.1's {@code Expect} on the REST port (RFC 9110 §10.1.1). A client that sends {@code Expect: 100-continue}
 * holds its body back until the server invites it with {@code 100 Continue} or answers finally instead (curl does
 * so for a body over 1 MiB, and sends it anyway after waiting 1 s). The server invites a body only where a route is
 * about to read it, within that route's limit:
 * <ol>
 *   <li>The infer path ({@link HttpInfer}) and every router route that takes a body ({@link #body}) refuse a
 *       declared {@code Content-Length} over their limit with 413, in their own error shape, without inviting it;
 *       otherwise they send {@code 100 Continue} as they start reading. A chunked body declares nothing: it is
 *       invited and held to the limit as it streams.</li>
 *   <li>A final answer sent while the body was neither invited nor sent (that 413; a 401, 404 or 405; a 417) says
 *       {@code Connection: close}, and the connection is closed once it is written. HTTP/1.1 lets such a client
 *       send its body anyway or not, so the server cannot know where a next request would begin: reading on would
 *       take the body for the next request, or wait for a body that never comes. A client that held its body back
 *       has sent nothing more, so the close is clean.</li>
 *   <li>An expectation other than {@code 100-continue} is answered 417 before any route sees the request.</li>
 *   <li>An HTTP/1.0 request's expectations are ignored, as HTTP/1.1 requires.</li>
 * </ol>
 * Vert.x's {@code HttpServerOptions.setHandle100ContinueAutomatically} stays off: it invites every body as soon as
 * its headers arrive, before any route could refuse it. Everything here runs on the request's event loop.
 */
public final class ExpectContinue {

  private static final String CONTINUE = "100-continue";
  /** Routing-context key: a route's body handler took the body (invited it, if the client waits to be asked). */
  private static final String INVITED = "kiln.expect.invited";
  /** Routing-context key: the body limit of the route reading the body, which its 413 names. */
  private static final String LIMIT = "kiln.body.limit";

  private ExpectContinue() {
  }

  /**
   * A route's body handler: a declared body over {@code limit} fails the route with 413 (the failure handler
   * answers in the route's shape, naming the limit: {@link #limit}) before the body is invited; any other is
   * gathered by vertx-web's {@link BodyHandler}, which sends {@code 100 Continue} when the client waits for it and
   * fails with 413 when a chunked body passes the limit.
   */
  public static Handler<RoutingContext> body(long limit) {
    BodyHandler body = BodyHandler.create(false).setBodyLimit(limit);
    return ctx -> {
      ctx.put(LIMIT, limit);
      if (declaredLength(ctx.request()) > limit) {
        ctx.fail(413);
        return;
      }
      ctx.put(INVITED, Boolean.TRUE);
      body.handle(ctx);
    };
  }

  /** The body limit of the route whose {@link #body} handler failed {@code ctx} with 413; else {@code otherwise}. */
  static long limit(RoutingContext ctx, long otherwise) {
    Object limit = ctx.get(LIMIT);
    return limit instanceof Long l ? l : otherwise;
  }

  /**
   * The request's expectations the server cannot meet, as the client wrote them; null when it names none or
   * only {@code 100-continue} (and always for HTTP/1.0). One header look-up for a request without one.
   */
  static String unmet(HttpServerRequest req) {
    if (req.getHeader(HttpHeaders.EXPECT) == null || req.version() == HttpVersion.HTTP_1_0) {
      return null;
    }
    List<String> unmet = new ArrayList<>();
    for (String value : req.headers().getAll(HttpHeaders.EXPECT)) {
      for (String member : value.split(",")) {
        String m = member.trim();
        if (!m.isEmpty() && !m.equalsIgnoreCase(CONTINUE)) {
          unmet.add(m);
        }
      }
    }
    return unmet.isEmpty() ? null : String.join(", ", unmet);
  }

  /** Sends {@code 100 Continue} if the client waits for it before sending the body the caller is about to read. */
  static void invite(HttpServerRequest req) {
    if (waitsToBeInvited(req) && bodyPending(req)) {
      req.response().writeContinue();
    }
  }

  /**
   * Called before a final answer is written with the request's body neither invited nor read: whether the client
   * may still be holding the body back (an HTTP/1.1 request with an expectation and a body to come). If so the
   * answer is marked {@code Connection: close} and the caller closes the connection once it is written
   * ({@link #close}).
   */
  static boolean closeBeforeBody(HttpServerRequest req) {
    if (req.version() != HttpVersion.HTTP_1_1 || req.getHeader(HttpHeaders.EXPECT) == null || !bodyPending(req)) {
      return false;
    }
    req.response().putHeader(HttpHeaders.CONNECTION, HttpHeaders.CLOSE);
    return true;
  }

  /** Closes the request's connection, after what was written to it (Vert.x flushes before it closes). */
  static void close(HttpServerRequest req) {
    HttpConnection c = req.connection();
    if (c != null) {
      c.close();
    }
  }

  /**
   * For a request the router serves: if its client waits to be invited, an answer that goes out before any route's
   * {@link #body} handler took the body (a 401, 404, 405, a declared body over the limit) closes the connection.
   */
  static void watch(RoutingContext ctx) {
    HttpServerRequest req = ctx.request();
    if (!waitsToBeInvited(req)) {
      return;
    }
    boolean[] closing = new boolean[1];
    ctx.addHeadersEndHandler(v -> closing[0] = ctx.get(INVITED) == null && closeBeforeBody(req));
    ctx.addEndHandler(ar -> {
      if (closing[0]) {
        close(req);
      }
    });
  }

  /** The declared {@code Content-Length}; -1 when there is none (or Netty let a malformed one through). */
  static long declaredLength(HttpServerRequest req) {
    String declared = req.getHeader(HttpHeaders.CONTENT_LENGTH);
    if (declared == null) {
      return -1;
    }
    try {
      return Long.parseLong(declared.trim());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static boolean waitsToBeInvited(HttpServerRequest req) {
    String expect = req.getHeader(HttpHeaders.EXPECT);
    return expect != null && req.version() != HttpVersion.HTTP_1_0
        && expect.toLowerCase(java.util.Locale.ROOT).contains(CONTINUE);
  }

  /** Whether body bytes are still to come: not ended, and a non-zero length declared or a chunked body. */
  private static boolean bodyPending(HttpServerRequest req) {
    if (req.isEnded()) {
      return false;
    }
    long declared = declaredLength(req);
    return declared > 0 || declared < 0 && req.headers().contains(HttpHeaders.TRANSFER_ENCODING);
  }
}
