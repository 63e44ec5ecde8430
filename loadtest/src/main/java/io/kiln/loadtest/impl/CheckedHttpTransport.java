package io.kiln.loadtest.impl;

import io.kiln.loadtest.HttpCall;
import io.kiln.loadtest.LoadOptions;
import io.kiln.loadtest.Protocol;
import io.kiln.loadtest.RequestSource;
import io.kiln.loadtest.ResponseCheck;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * HTTP/1.1 traffic for callers that bring their own requests ({@link RequestSource}) or judge answers by body
 * ({@link ResponseCheck}): request {@code i} goes to {@code targets[i % n]}, its answer's body is read and judged,
 * and its whole exchange is bounded by the request timeout ({@link TimedExchanges}). Without a source the mix's requests
 * go to the model's infer path as {@link HttpTransport} sends them; without a check the status decides.
 */
final class CheckedHttpTransport implements Transport {

  private final TimedExchanges exchanges;
  private final RequestSource source;
  private final HttpCall[] mixCalls;
  private final ResponseCheck check;
  private final AtomicLong next = new AtomicLong();

  CheckedHttpTransport(Vertx vertx, LoadOptions options) {
    exchanges = new TimedExchanges(vertx, options, "no answer");
    source = options.source();
    mixCalls = HttpTransport.calls(options, options.protocol() == Protocol.HTTP_BINARY);
    check = options.check();
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
    TimedExchanges.Exchange x = exchanges.open(index, call, r -> { }, done);
    x.response()
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

  @Override
  public Future<Void> close() {
    return exchanges.close();
  }
}
