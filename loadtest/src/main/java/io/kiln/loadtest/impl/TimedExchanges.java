package io.kiln.loadtest.impl;

import io.kiln.loadtest.HttpCall;
import io.kiln.loadtest.LoadOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.net.URI;
import java.util.List;
import java.util.function.Consumer;

/**
 * HTTP/1.1 exchanges bounded by the request timeout, for the transports that read their answers themselves
 * ({@link CheckedHttpTransport}, {@link LlmTransport}): request {@code i} goes to {@code targets[i % n]}, and its
 * whole exchange (pool wait, connect, send, answer, a stream to its end) is bounded by the timeout: a timer abandons
 * a request not settled by then, resetting it (its connection is freed, a late answer not read), and counts it as
 * {@code timeout}. Each exchange is touched on the one event loop that sent it.
 */
final class TimedExchanges {

  private final Vertx vertx;
  private final HttpClientAgent client;
  private final String[] hosts;
  private final int[] ports;
  private final long timeoutMs;
  private final String timedOut;

  /** @param late what a request not settled within the timeout failed to do, e.g. "no answer" */
  TimedExchanges(Vertx vertx, LoadOptions options, String late) {
    this.vertx = vertx;
    List<URI> targets = options.targets();
    hosts = targets.stream().map(URI::getHost).toArray(String[]::new);
    ports = targets.stream().mapToInt(LoadOptions::port).toArray();
    timeoutMs = Math.max(1, options.requestTimeout().toMillis());
    timedOut = late + " within " + timeoutMs + " ms";
    client = HttpTransport.client(vertx, options);
  }

  /**
   * Sends request {@code index} ({@code call}, with {@code headers} added to the call's own) once a connection is
   * free, unless the timeout passed first (then it is never sent); {@code done} gets the exchange's one outcome.
   */
  Exchange open(long index, HttpCall call, Consumer<RequestOptions> headers, Consumer<Outcome> done) {
    int t = (int) (index % hosts.length);
    RequestOptions r = new RequestOptions().setMethod(HttpMethod.POST).setHost(hosts[t]).setPort(ports[t])
        .setURI(call.path());
    headers.accept(r);
    call.headers().forEach(r::putHeader);
    // Called on an event-loop context; the timer and the client's callbacks run on that same context.
    Exchange x = new Exchange(done);
    x.timer = vertx.setTimer(timeoutMs, id -> x.abandon(Outcome.TIMEOUT.because(timedOut)));
    x.response = client.request(r).compose(req -> {
      if (x.settled) { // timed out waiting for a connection: never sent late
        req.reset();
        return Future.failedFuture("timed out before it was sent");
      }
      x.request = req;
      return req.send(Buffer.buffer(call.body()));
    });
    return x;
  }

  Future<Void> close() {
    return client.close();
  }

  /** One request's exchange: settled once, by its answer, its failure or its timer. */
  final class Exchange {
    private final Consumer<Outcome> done;
    private Future<HttpClientResponse> response;
    private boolean settled;
    private long timer;
    private HttpClientRequest request;

    private Exchange(Consumer<Outcome> done) {
      this.done = done;
    }

    /** The answer's head, or why there is none. */
    Future<HttpClientResponse> response() {
      return response;
    }

    void settle(Outcome outcome) {
      if (settled) {
        return;
      }
      settled = true;
      vertx.cancelTimer(timer);
      done.accept(outcome);
    }

    /**
     * Settles a request whose answer is not read to its end: it is reset, so a late answer is not read, after it is
     * settled, so that the failure the reset brings (the response's, the stream's) finds it settled.
     */
    void abandon(Outcome outcome) {
      HttpClientRequest sent = settled ? null : request;
      settle(outcome);
      if (sent != null) {
        sent.reset();
      }
    }
  }
}
