package io.kiln.loadtest;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Client calls from a test thread. */
final class VertxCalls {

  private VertxCalls() {
  }

  /**
   * Starts {@code call} on a Vert.x context and waits (10 s at most) for its result. Chained from the test
   * thread instead, a callback (a response body or message handler) can be attached after the event loop has
   * already read the response, and the call hangs: that happened about once in a few hundred requests.
   */
  static <T> T await(Vertx vertx, Supplier<Future<T>> call) throws Exception {
    CompletableFuture<T> result = new CompletableFuture<>();
    vertx.runOnContext(v -> call.get().onComplete(ar -> {
      if (ar.succeeded()) {
        result.complete(ar.result());
      } else {
        result.completeExceptionally(ar.cause());
      }
    }));
    return result.get(10, TimeUnit.SECONDS);
  }
}
