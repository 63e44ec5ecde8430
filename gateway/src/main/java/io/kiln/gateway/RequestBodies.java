package io.kiln.gateway;

import io.kiln.gateway.impl.ExpectContinue;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;

/**
 * The body handler for routes mounted on the gateway's HTTP server ({@link KilnGateway#addRoutes}) that read a
 * request body: the same rules as the gateway's own body routes, {@code Expect: 100-continue} included.
 */
public final class RequestBodies {

  private RequestBodies() {
  }

  /**
   * Gathers the body of a route, at most {@code maxBytes}: a declared {@code Content-Length} over the limit fails the
   * route with 413 before the body is invited (the connection is closed once the answer is written; the route's
   * failure handler, if it has one, answers it in its own shape, else the gateway's naming the limit); a chunked body
   * that passes the limit fails it with 413 as it streams; otherwise the body is invited ({@code 100 Continue} when
   * the client waits for it) and read. Runs on the request's event loop.
   */
  public static Handler<RoutingContext> upTo(long maxBytes) {
    return ExpectContinue.body(maxBytes);
  }
}
