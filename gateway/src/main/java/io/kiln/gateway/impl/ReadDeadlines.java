package io.kiln.gateway.impl;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerRequest;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Closes connections whose client takes longer than the read timeout to send a request: from the moment the
 * connection opens, or its previous answer was sent, until the request's last body byte arrived. A slow or
 * stalled sender (slowloris, a half-sent body) so holds a connection, and the buffers behind it, for a bounded
 * time; a client waiting for its answer is never timed out here (the request deadline covers that). Idle
 * keep-alive connections are closed by the same clock, like a keep-alive timeout.
 *
 * <p>Every method runs on the connection's event loop; the map is shared by all loops. It sets each
 * connection's close handler: other code must not replace it (use the response's).
 *
 * <p><b>Cost per request:</b> none in timers. Each connection has one clock: starting it sets a deadline and
 * schedules a Vert.x timer only if none is pending; stopping it clears the deadline and leaves the timer be. A
 * timer that fires early (the deadline moved on) re-arms for the time left, one that finds the clock stopped
 * ends. A kept-alive connection answering many requests a second so sets one timer per timeout period rather
 * than arming and cancelling one per request (which cost ~5 % of the event loop's CPU at 20k requests/s).
 */
final class ReadDeadlines {

  private final Vertx vertx;
  private final long timeoutMillis;
  private final long timeoutNanos;
  private final LongSupplier nanoClock;
  // Weak, so a connection whose close handler someone else replaced is still forgotten once it is gone; a
  // clock never refers to its connection (only its pending timer does, until it fires).
  private final Map<HttpConnection, Clock> clocks =
      java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());
  private final AtomicLong closed = new AtomicLong();

  ReadDeadlines(Vertx vertx, long timeoutMillis) {
    this(vertx, timeoutMillis, System::nanoTime);
  }

  /** @param nanoClock monotonic nanoseconds, the clock deadlines are kept on (Vert.x timers wake it up) */
  ReadDeadlines(Vertx vertx, long timeoutMillis, LongSupplier nanoClock) {
    this.vertx = vertx;
    this.timeoutMillis = timeoutMillis;
    this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    this.nanoClock = nanoClock;
  }

  /** One connection's read clock; touched only on the connection's event loop. */
  private static final class Clock {
    /** When the connection is closed unless the clock stops first; 0 while stopped. */
    long deadline;
    /** Whether a Vert.x timer is pending for this clock (it fires at or before the deadline). */
    boolean scheduled;
    boolean gone;
  }

  /** A new connection: its first request must arrive in time. */
  void opened(HttpConnection c) {
    clocks.put(c, new Clock());
    arm(c);
    c.closeHandler(v -> {
      Clock k = clocks.remove(c);
      if (k != null) {
        k.gone = true; // a pending timer finds it gone and ends
      }
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
    Clock k = clocks.get(c);
    if (k == null) {
      return;
    }
    k.deadline = Math.max(1, nanoClock.getAsLong() + timeoutNanos);
    if (!k.scheduled) {
      schedule(c, k, timeoutMillis);
    }
  }

  private void disarm(HttpConnection c) {
    Clock k = clocks.get(c);
    if (k != null) {
      k.deadline = 0;
    }
  }

  private void schedule(HttpConnection c, Clock k, long delayMillis) {
    k.scheduled = true;
    vertx.setTimer(Math.max(1, delayMillis), t -> fired(c, k));
  }

  private void fired(HttpConnection c, Clock k) {
    k.scheduled = false;
    if (k.gone || k.deadline == 0) {
      return;
    }
    long left = k.deadline - nanoClock.getAsLong();
    if (left > 0) {
      schedule(c, k, (left + 999_999) / 1_000_000); // the deadline moved on: wait for the rest
      return;
    }
    k.gone = true;
    clocks.remove(c);
    closed.incrementAndGet();
    c.close();
  }
}
