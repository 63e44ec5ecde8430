package io.kiln.gateway.management;

import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;

/**
 * The management APIs' authorisation: with a token configured, a request must carry
 * {@code Authorization: Bearer <token>} (compared in constant time) or it gets 401 with a JSON error;
 * without one, every request passes.
 */
public final class BearerToken implements Handler<RoutingContext> {

  private final byte[] token;

  /** @param token the required token, or null/empty for none */
  public BearerToken(String token) {
    this.token = token == null || token.isEmpty() ? null : token.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Whether {@code authorization} (an HTTP {@code Authorization} header's or the gRPC {@code authorization}
   * metadata's value, null when absent) is {@code Bearer <token>}; always true without a configured token.
   */
  public boolean accepts(String authorization) {
    if (token == null) {
      return true;
    }
    byte[] given = authorization != null && authorization.startsWith("Bearer ")
        ? authorization.substring(7).trim().getBytes(StandardCharsets.UTF_8) : new byte[0];
    return MessageDigest.isEqual(given, token);
  }

  @Override
  public void handle(RoutingContext ctx) {
    if (token == null) {
      ctx.next();
      return;
    }
    if (accepts(ctx.request().getHeader(HttpHeaders.AUTHORIZATION))) {
      ctx.next();
    } else {
      ctx.response().setStatusCode(401).putHeader("WWW-Authenticate", "Bearer")
          .putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
          .end(io.kiln.runtime.WireCodec.toJson(Map.of("error",
              "management API needs a valid token (Authorization: Bearer ...)")));
    }
  }
}
