package io.kiln.loadtest.impl;

import io.kiln.loadtest.HttpCall;
import io.kiln.loadtest.LoadOptions;
import io.kiln.loadtest.Protocol;
import io.kiln.loadtest.RequestSource;
import io.kiln.loadtest.ResponseCheck;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * HTTP/1.1 traffic for callers that bring their own requests ({@link RequestSource}) or judge answers by body
 * ({@link ResponseCheck}): request {@code i} goes to {@code targets[i % n]}, its answer's body is read and judged,
 * and its whole exchange (pool wait, connect, send, answer) is bounded by the request timeout: a timer resets a
 * request that has not been answered by then and counts it as {@code timeout}. Without a source the mix's requests
 * go to the model's infer path as {@link HttpTransport} sends them; without a check the status decides.
 */
final class CheckedHttpTransport implements Transport {

  private final Vertx vertx;
  private final HttpClientAgent client;
  private final String[] hosts;
  private final int[] ports;
  private final RequestSource source;
  private final HttpCall[] mixCalls;
  private final ResponseCheck check;
  private final long timeoutMs;
  private final String timedOut;
  private final AtomicLong next = new AtomicLong();

  CheckedHttpTransport(Vertx vertx, LoadOptions options) {
    this.vertx = vertx;
    List<URI> targets = options.targets();
    hosts = targets.stream().map(URI::getHost).toArray(String[]::new);
    ports = targets.stream().mapToInt(LoadOptions::port).toArray();
    source = options.source();
    mixCalls = HttpTransport.calls(options, options.protocol() == Protocol.HTTP_BINARY);
    check = options.check();
    timeoutMs = Math.max(1, options.requestTimeout().toMillis());
    timedOut = "no answer within " + timeoutMs + " ms";
    client = HttpTransport.client(vertx, options);
  }

  @Override
  public void send(int entry, Consumer<Outcome> done) {
    long index = next.getAndIncrement();
    HttpCall call;
    try {
      call = source != null ? source.request(index) : mixCalls[entry];
    } catch (RuntimeException e) {
      done.accept(Outcome.CONNECTION_ERROR.because("the request source threw " + kind(e)));
      return;
    }
    int t = (int) (index % hosts.length);
    RequestOptions r = new RequestOptions().setMethod(HttpMethod.POST).setHost(hosts[t]).setPort(ports[t])
        .setURI(call.path());
    call.headers().forEach(r::putHeader);
    // send() runs on an event-loop context; the timer and the client's callbacks run on that same context.
    Exchange x = new Exchange(done);
    x.timer = vertx.setTimer(timeoutMs, id -> x.settle(Outcome.TIMEOUT.because(timedOut)));
    client.request(r)
        .compose(req -> {
          if (x.settled) { // timed out waiting for a connection: never sent late
            req.reset();
            return Future.failedFuture("timed out before it was sent");
          }
          x.request = req;
          return req.send(Buffer.buffer(call.body()));
        })
        .compose(resp -> resp.body().map(body -> judge(index, resp, body)))
        .onComplete(ar -> x.settle(ar.succeeded() ? ar.result() : Outcome.failure(ar.cause()).because(kind(ar.cause()))));
  }

  private Outcome judge(long index, HttpClientResponse resp, Buffer body) {
    if (check == null) {
      return Outcome.http(resp.statusCode());
    }
    try {
      ResponseCheck.Verdict v = check.check(index, resp.statusCode(), resp.headers(), body);
      return Outcome.judged(v.key(), v.ok(), v.example());
    } catch (RuntimeException e) {
      return Outcome.judged("check_error", false, "the check threw " + kind(e));
    }
  }

  /** A failure's kind, digits masked (ports, sizes) so that kinds stay few. */
  private static String kind(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getMessage() == null) {
      c = c.getCause();
    }
    String s = c.getClass().getSimpleName() + (c.getMessage() == null ? "" : ": " + c.getMessage());
    return s.substring(0, Math.min(160, s.length())).replaceAll("[0-9]+", "N");
  }

  /** One request's exchange: settled once, by its answer, its failure or its timer. */
  private final class Exchange {
    private final Consumer<Outcome> done;
    private boolean settled;
    private long timer;
    private HttpClientRequest request;

    private Exchange(Consumer<Outcome> done) {
      this.done = done;
    }

    void settle(Outcome outcome) {
      if (settled) {
        return;
      }
      settled = true;
      if (outcome.kind() == Outcome.Kind.TIMEOUT && request != null) {
        request.reset(); // frees its connection; a late answer is not read
      } else {
        vertx.cancelTimer(timer);
      }
      done.accept(outcome);
    }
  }

  @Override
  public Future<Void> close() {
    return client.close();
  }
}
