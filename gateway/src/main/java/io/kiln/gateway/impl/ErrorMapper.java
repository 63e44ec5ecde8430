package io.kiln.gateway.impl;

import io.kiln.pools.CapacityExceededException;
import io.kiln.pools.InferenceException;
import io.kiln.pools.InferenceException.Kind;
import io.kiln.runtime.Futures;
import io.vertx.grpc.common.GrpcStatus;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns any failure into what the client sees: an {@link InferenceException} kind (which fixes the HTTP code
 * and gRPC status), a message, and a Retry-After for 503s. Anything that is not an InferenceException is a
 * bug somewhere: it is logged with its stack and reported as a bare 500 / INTERNAL, never with internals.
 */
final class ErrorMapper {

  private static final Logger LOG = LoggerFactory.getLogger(ErrorMapper.class);

  /** A failure as the protocol layers report it. */
  record Failure(Kind kind, String message, int retryAfterSeconds) {

    int httpStatus() {
      return kind.httpStatus();
    }

    /** Whether a Retry-After goes with it. */
    boolean retryable() {
      return kind == Kind.UNAVAILABLE;
    }
  }

  private final int defaultRetryAfterSeconds;

  ErrorMapper(int defaultRetryAfterSeconds) {
    this.defaultRetryAfterSeconds = defaultRetryAfterSeconds;
  }

  Failure map(Throwable t) {
    Throwable e = Futures.unwrap(t);
    if (e instanceof CapacityExceededException c) {
      return new Failure(c.kind(), c.getMessage(), seconds(c.retryAfter()));
    }
    if (e instanceof InferenceException ie) {
      return new Failure(ie.kind(), ie.getMessage(), defaultRetryAfterSeconds);
    }
    LOG.error("Internal error while serving a request", e);
    return new Failure(Kind.INTERNAL, "internal error", defaultRetryAfterSeconds);
  }

  static GrpcStatus grpcStatus(Kind kind) {
    return switch (kind) {
      case INVALID_INPUT -> GrpcStatus.INVALID_ARGUMENT;
      case NOT_FOUND -> GrpcStatus.NOT_FOUND;
      case TOO_LARGE -> GrpcStatus.RESOURCE_EXHAUSTED;
      case UNAVAILABLE -> GrpcStatus.UNAVAILABLE;
      case DEADLINE_EXCEEDED -> GrpcStatus.DEADLINE_EXCEEDED;
      case INTERNAL -> GrpcStatus.INTERNAL;
    };
  }

  /** The metrics label of a failure kind. */
  static String outcome(Kind kind) {
    return switch (kind) {
      case INVALID_INPUT -> "invalid";
      case NOT_FOUND -> "not_found";
      case TOO_LARGE -> "too_large";
      case UNAVAILABLE -> "unavailable";
      case DEADLINE_EXCEEDED -> "timeout";
      case INTERNAL -> "error";
    };
  }

  private int seconds(Duration d) {
    if (d == null || d.isNegative()) {
      return defaultRetryAfterSeconds;
    }
    long s = d.getSeconds() + (d.getNano() > 0 ? 1 : 0);
    return (int) Math.min(s, Integer.MAX_VALUE);
  }
}
