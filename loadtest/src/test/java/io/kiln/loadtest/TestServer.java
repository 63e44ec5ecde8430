package io.kiln.loadtest;

import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Loopback HTTP servers with a known behaviour, for testing the generator against facts. Each runs on one
 * event loop of its own Vert.x instance, so handler state needs no locking.
 */
final class TestServer implements AutoCloseable {
  final Vertx vertx;
  final int port;

  private TestServer(Vertx vertx, int port) {
    this.vertx = vertx;
    this.port = port;
  }

  /** {@code handler} is given the Vert.x instance and returns the request handler. */
  static TestServer start(Function<Vertx, Handler<HttpServerRequest>> handler) {
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1));
    try {
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0))
          .requestHandler(handler.apply(vertx))
          .listen().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      return new TestServer(vertx, server.actualPort());
    } catch (Exception e) {
      vertx.close();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Answers at once, except that once, {@code stallAfterMs} after its first request, it freezes for
   * {@code stallMs}: every request arriving during the freeze is answered when it ends (like a GC pause).
   */
  static TestServer stallingOnce(long stallAfterMs, long stallMs) {
    return start(vertx -> new Handler<>() {
      long firstNs = -1;
      long stallUntilNs = -1;

      @Override
      public void handle(HttpServerRequest req) {
        req.end().onSuccess(v -> {
          long now = System.nanoTime();
          if (firstNs < 0) {
            firstNs = now;
          }
          if (stallUntilNs < 0 && now - firstNs >= TimeUnit.MILLISECONDS.toNanos(stallAfterMs)) {
            stallUntilNs = now + TimeUnit.MILLISECONDS.toNanos(stallMs);
          }
          long remainingMs = TimeUnit.NANOSECONDS.toMillis(stallUntilNs - now);
          if (stallUntilNs > 0 && remainingMs >= 1) {
            vertx.setTimer(remainingMs, id -> req.response().end("ok"));
          } else {
            req.response().end("ok");
          }
        });
      }
    });
  }

  /**
   * Serves at most {@code slots} requests at once, each taking {@code delayMs}; the rest wait in a FIFO
   * queue. Its capacity is therefore {@code slots * 1000 / delayMs} requests per second.
   */
  static TestServer limitedConcurrency(int slots, long delayMs) {
    return start(vertx -> new Handler<>() {
      final Deque<HttpServerRequest> queue = new ArrayDeque<>();
      int busy;

      @Override
      public void handle(HttpServerRequest req) {
        req.end().onSuccess(v -> {
          queue.add(req);
          drain();
        });
      }

      private void drain() {
        while (busy < slots && !queue.isEmpty()) {
          HttpServerRequest next = queue.poll();
          busy++;
          vertx.setTimer(delayMs, id -> {
            busy--;
            next.response().end("ok");
            drain();
          });
        }
      }
    });
  }

  @Override
  public void close() {
    try {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
