package io.kiln.control.support;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * A bare Vert.x HTTP server on a free loopback port serving one router, with a JDK client: for the control plane's
 * APIs without a gateway or a cluster. Close it after the test.
 */
public final class RouterServer implements AutoCloseable {

  private final Vertx vertx;
  private final HttpServer server;
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  public RouterServer(Consumer<Router> routes) {
    this((vertx, router) -> routes.accept(router));
  }

  /** @param routes mounts the routes, given the server's Vert.x (for APIs that set timers on it) */
  public RouterServer(BiConsumer<Vertx, Router> routes) {
    this.vertx = Vertx.vertx();
    Router router = Router.router(vertx);
    routes.accept(vertx, router);
    this.server = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1")
        .toCompletionStage().toCompletableFuture().join();
  }

  public Vertx vertx() {
    return vertx;
  }

  public URI uri(String pathAndQuery) {
    return URI.create("http://127.0.0.1:" + server.actualPort() + pathAndQuery);
  }

  /** Sends {@code request} (built against {@link #uri}) and reads the whole body as text. */
  public HttpResponse<String> send(HttpRequest.Builder request) {
    try {
      return client.send(request.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public HttpResponse<String> get(String pathAndQuery, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(pathAndQuery)).GET();
    if (headers.length > 0) {
      b.headers(headers);
    }
    return send(b);
  }

  /** The underlying client, for streamed bodies. */
  public HttpClient client() {
    return client;
  }

  @Override
  public void close() {
    vertx.close().toCompletionStage().toCompletableFuture().join();
  }
}
