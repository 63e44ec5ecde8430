package io.kiln.loadtest;

import java.util.Map;
import java.util.Objects;

/**
 * One HTTP POST a {@link RequestSource} makes: the path (with its query, if any), the body, and the request's own
 * headers ({@code content-type} among them; none are added).
 */
public record HttpCall(String path, byte[] body, Map<String, String> headers) {

  public HttpCall {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(body, "body");
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("path must start with '/', got '" + path + "'");
    }
    headers = headers == null ? Map.of() : Map.copyOf(headers);
  }

  /** A JSON body. */
  public static HttpCall json(String path, byte[] body) {
    return new HttpCall(path, body, Map.of("content-type", "application/json"));
  }
}
