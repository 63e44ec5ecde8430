package io.kiln.pools;

import java.time.Duration;

/**
 * The request was refused at once because a queue is full: the client should retry after
 * {@link #retryAfter()} (the gateway sends 503 with {@code Retry-After}, gRPC UNAVAILABLE).
 */
public class CapacityExceededException extends InferenceException {

  private final Duration retryAfter;

  public CapacityExceededException(String message, Duration retryAfter) {
    super(Kind.UNAVAILABLE, message);
    this.retryAfter = retryAfter;
  }

  public Duration retryAfter() {
    return retryAfter;
  }
}
