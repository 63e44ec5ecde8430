package io.kiln.gateway.impl;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerRequest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Closes connections whose client takes longer than the read timeout to send a request: from the moment the
 * connection opens, or its previous answer was sent, until the request's last body byte arrived. A slow or
 * stalled sender (slowloris, a half-sent body) so holds a connection, and the buffers behind it, for a bounded
 * time; a client waiting for its answer is never timed out here (the request deadline covers that). Idle
 * keep-alive connections are closed by the same clock, like a keep-alive timeout.
 *
 * <p>Every method runs on the connection's event loop; the maps are shared by all loops. It sets each
 * connection's close handler: other code must not replace it (use the response's).
 */
final class ReadDeadlines {

  private final Vertx vertx;
  private final long timeoutMillis;
  private final Map<HttpConnection, Long> timers = new ConcurrentHashMap<>();
  // Weak, so a connection whose close handler someone else replaced is still forgotten once it is gone.
  private final java.util.Set<HttpConnection> open =
      java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.WeakHashMap<>()));
  private final AtomicLong closed = new AtomicLong();

  ReadDeadlines(Vertx vertx, long timeoutMillis) {
    this.vertx = vertx;
    this.timeoutMillis = timeoutMillis;
  }

  /** A new connection: its first request must arrive in time. */
  void opened(HttpConnection c) {
    open.add(c);
    arm(c);
    c.closeHandler(v -> {
      open.remove(c);
      disarm(c);
    });
  }

  /**
   * A request's headers arrived on {@code c}. For HTTP/1.x the clock keeps running until its body is in; for
   * multiplexed (HTTP/2) connections only the first request is timed, streams being the client's to pace.
   *
   * @param answered registers an action for when the answer was sent (or the exchange failed)
   */
  void requestStarted(HttpServerRequest req, java.util.function.Consumer<Runnable> answered) {
    HttpConnection c = req.connection();
    if (c == null) {
      return;
    }
    if (req.version() == io.vertx.core.http.HttpVersion.HTTP_2) {
      disarm(c);
      return;
    }
    // The answer may go out before the request's end was read (a GET answered at once) or after it: the
    // next request's clock starts when both happened; until the request is read, the running clock stays.
    boolean[] readAndAnswered = new boolean[2];
    Runnable read = () -> {
      readAndAnswered[0] = true;
      if (readAndAnswered[1]) {
        arm(c);
      } else {
        disarm(c);
      }
    };
    if (req.isEnded()) {
      read.run();
    } else {
      req.end().onComplete(ar -> {
        if (ar.succeeded()) {
          read.run();
        } else {
          disarm(c);
        }
      });
    }
    answered.accept(() -> {
      readAndAnswered[1] = true;
      if (readAndAnswered[0]) {
        arm(c);
      }
    });
  }

  /** Connections closed for being too slow, since start. */
  long closedCount() {
    return closed.get();
  }

  private void arm(HttpConnection c) {
    if (!open.contains(c)) {
      return;
    }
    long id = vertx.setTimer(timeoutMillis, t -> {
      if (timers.remove(c, t)) {
        closed.incrementAndGet();
        c.close();
      }
    });
    Long previous = timers.put(c, id);
    if (previous != null) {
      vertx.cancelTimer(previous);
    }
  }

  private void disarm(HttpConnection c) {
    Long id = timers.remove(c);
    if (id != null) {
      vertx.cancelTimer(id);
    }
  }
}
