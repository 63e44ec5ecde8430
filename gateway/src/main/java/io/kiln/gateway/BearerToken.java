package io.kiln.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * A bearer credential check: with a token configured, a request must carry {@code Bearer <token>} (HTTP header
 * {@code Authorization}, gRPC metadata {@code authorization}), compared in constant time; without one, every request
 * passes. It only judges: each API answers a refusal in its own shape (the OpenAI API its error object, the control
 * plane's APIs {@code {"error": "..."}} with 401, the repository extension's gRPC calls UNAUTHENTICATED).
 *
 * <p>Immutable; any thread.
 */
public final class BearerToken {

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
}
