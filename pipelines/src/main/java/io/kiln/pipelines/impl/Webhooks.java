package io.kiln.pipelines.impl;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * POSTs JSON to webhooks (the callback step and the completion webhook). Only {@code http(s)://}; a
 * non-2xx answer is a failure. Thread-safe.
 */
public final class Webhooks {

  private final HttpClient http;

  public Webhooks(Duration connectTimeout) {
    this.http = HttpClient.newBuilder().connectTimeout(connectTimeout).build();
  }

  /**
   * Blocking POST.
   *
   * @return the HTTP status (2xx)
   * @throws IOException if it could not be sent or did not answer 2xx in time
   */
  public int post(String url, String json, Duration timeout) throws IOException {
    try {
      HttpResponse<String> r = http.send(request(url, json, timeout), HttpResponse.BodyHandlers.ofString());
      return check(url, r);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while calling " + url);
    } catch (java.net.http.HttpTimeoutException e) {
      throw new IOException("POST " + url + " did not answer within " + timeout.toMillis() + " ms");
    }
  }

  /** Non-blocking POST; the future fails as {@link #post} throws. */
  public CompletableFuture<Integer> postAsync(String url, String json, Duration timeout) {
    HttpRequest req;
    try {
      req = request(url, json, timeout);
    } catch (IOException e) {
      return CompletableFuture.failedFuture(e);
    }
    return http.sendAsync(req, HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
      try {
        return check(url, r);
      } catch (IOException e) {
        throw new CompletionException(e);
      }
    });
  }

  private static HttpRequest request(String url, String json, Duration timeout) throws IOException {
    URI uri;
    try {
      uri = URI.create(url);
    } catch (IllegalArgumentException e) {
      throw new IOException("'" + url + "' is not a valid URL");
    }
    if (uri.getScheme() == null || !(uri.getScheme().equals("http") || uri.getScheme().equals("https"))) {
      throw new IOException("webhook URL must be http:// or https://, got '" + url + "'");
    }
    return HttpRequest.newBuilder(uri).timeout(timeout).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8)).build();
  }

  private static int check(String url, HttpResponse<String> r) throws IOException {
    if (r.statusCode() / 100 != 2) {
      String body = r.body() == null ? "" : r.body();
      throw new IOException("POST " + url + " answered HTTP " + r.statusCode()
          + (body.isBlank() ? "" : ": " + (body.length() > 200 ? body.substring(0, 200) + "..." : body)));
    }
    return r.statusCode();
  }
}
