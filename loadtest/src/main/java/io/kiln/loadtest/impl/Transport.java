package io.kiln.loadtest.impl;

import io.kiln.loadtest.LoadMode;
import io.kiln.loadtest.LoadOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.function.Consumer;

/**
 * Sends pre-encoded inference requests over one protocol. Requests are encoded once, at construction,
 * so the hot path only writes bytes.
 */
public interface Transport {

  /**
   * Sends the request for mix entry {@code entry}. Call on a Vert.x context; {@code done} runs exactly
   * once, on that context, with the outcome (never with an exception).
   */
  void send(int entry, Consumer<Outcome> done);

  /** Closes connections; requests still in flight complete with a connection error. */
  Future<Void> close();

  /**
   * A transport for {@code options.protocol()}.
   *
   * @throws IllegalArgumentException or IllegalStateException if a request cannot be encoded for it
   */
  static Transport create(Vertx vertx, LoadOptions options) {
    int concurrency = options.mode() == LoadMode.CLOSED ? options.connections() : options.maxInFlight();
    if (options.source() instanceof io.kiln.loadtest.LlmWorkload) {
      return new LlmTransport(vertx, options); // streamed answers, read as they arrive
    }
    if (options.source() != null || options.check() != null || options.targets().size() > 1) {
      return new CheckedHttpTransport(vertx, options); // validated: HTTP only
    }
    return switch (options.protocol()) {
      case HTTP_JSON -> new HttpTransport(vertx, options, false);
      case HTTP_BINARY -> new HttpTransport(vertx, options, true);
      case GRPC -> new GrpcTransport(vertx, options, concurrency);
    };
  }
}
