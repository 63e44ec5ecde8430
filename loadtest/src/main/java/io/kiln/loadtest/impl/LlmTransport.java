package io.kiln.loadtest.impl;

import io.kiln.loadtest.LlmWorkload;
import io.kiln.loadtest.LoadOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientResponse;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * OpenAI generations ({@link LlmWorkload}): request {@code i} is the workload's, sent to
 * {@code targets[i % n]}; a 200 answer's body is parsed as Server-Sent Events buffer by buffer as it arrives, so each
 * text chunk is timed when it reaches the generator ({@link LlmStream}), and the outcome carries the timings (a
 * workload that does not stream: the whole JSON answer, timed as one chunk when it has arrived, its tokens the usage's
 * {@code completion_tokens}). Any
 * other status counts as {@code http:<status>} (the error's message as its example). The request timeout bounds the
 * whole exchange, the stream included ({@link TimedExchanges}): a stream not ended by then is reset and counted as
 * {@code timeout}.
 */
final class LlmTransport implements Transport {

  private final TimedExchanges exchanges;
  private final LlmWorkload workload;
  private final AtomicLong next = new AtomicLong();

  LlmTransport(Vertx vertx, LoadOptions options) {
    exchanges = new TimedExchanges(vertx, options, "stream not ended");
    workload = (LlmWorkload) options.source();
  }

  @Override
  public void send(int entry, Consumer<Outcome> done) {
    long index = next.getAndIncrement();
    String accept = workload.stream() ? "text/event-stream" : "application/json";
    TimedExchanges.Exchange x = exchanges.open(index, workload.request(index), r -> r.putHeader("accept", accept), done);
    // Handlers are set in the same event-loop turn the response arrives in, so no buffer is missed.
    x.response().onComplete(ar -> {
      if (ar.failed()) {
        x.settle(Outcome.failure(ar.cause()).because(Outcome.mask(String.valueOf(ar.cause().getMessage()))));
      } else {
        read(ar.result(), x);
      }
    });
  }

  private void read(HttpClientResponse resp, TimedExchanges.Exchange x) {
    if (resp.statusCode() != 200) {
      resp.body().onComplete(b -> x.settle(Outcome.http(resp.statusCode())
          .because(b.succeeded() ? errorMessage(b.result()) : "body unreadable")));
      return;
    }
    if (!workload.stream()) {
      resp.body().onComplete(b -> x.settle(b.succeeded() ? whole(b.result(), System.nanoTime())
          : Outcome.failure(b.cause()).because(Outcome.mask(String.valueOf(b.cause().getMessage())))));
      return;
    }
    LlmStream stream = new LlmStream();
    SseParser parser = new SseParser(data -> stream.onEvent(data, System.nanoTime()));
    resp.handler(buf -> {
      try {
        parser.feed(buf);
      } catch (IllegalStateException e) {
        x.abandon(Outcome.judged("stream_error", false, Outcome.mask(e.getMessage())));
      }
    });
    resp.exceptionHandler(e -> x.settle(Outcome.failure(e).because(Outcome.mask(String.valueOf(e.getMessage())))));
    resp.endHandler(v -> x.settle(stream.outcome()));
  }

  /** A non-streamed answer that arrived whole at {@code nowNs}: one chunk of {@code usage.completion_tokens}. */
  static Outcome whole(Buffer body, long nowNs) {
    com.fasterxml.jackson.databind.JsonNode n;
    try {
      n = JSON.readTree(body.getBytes());
    } catch (java.io.IOException e) {
      return Outcome.judged("stream_error", false, "the answer is not JSON");
    }
    com.fasterxml.jackson.databind.JsonNode tokens = n == null ? null : n.path("usage").path("completion_tokens");
    if (tokens == null || !tokens.canConvertToLong() || !n.path("choices").path(0).isObject()) {
      return Outcome.judged("stream_error", false, "the answer has no choices[0] or usage.completion_tokens");
    }
    return Outcome.http(200).with(new LlmTimings(nowNs, new long[0], 1, tokens.asLong()));
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  /** An OpenAI error body's message, else the start of the body. */
  private static String errorMessage(Buffer body) {
    String s = body.toString();
    int i = s.indexOf("\"message\"");
    if (i >= 0) {
      int q = s.indexOf('"', s.indexOf(':', i) + 1);
      int end = q < 0 ? -1 : s.indexOf('"', q + 1);
      if (end > q) {
        return Outcome.mask(s.substring(q + 1, end));
      }
    }
    return Outcome.mask(s.strip());
  }

  @Override
  public Future<Void> close() {
    return exchanges.close();
  }
}
