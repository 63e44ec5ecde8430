package io.kiln.pools;

import java.util.Objects;

/**
 * Why an inference request was not answered with outputs. The {@link Kind} decides the protocol status
 * (HTTP code, gRPC status) the gateway returns; the message is shown to the client, so it names the
 * offending field or limit and never leaks internals.
 */
public class InferenceException extends RuntimeException {

  /** Failure classes, each with its HTTP status. */
  public enum Kind {
    INVALID_INPUT(400), NOT_FOUND(404), TOO_LARGE(413), UNAVAILABLE(503), DEADLINE_EXCEEDED(504), INTERNAL(500);

    private final int httpStatus;

    Kind(int httpStatus) {
      this.httpStatus = httpStatus;
    }

    public int httpStatus() {
      return httpStatus;
    }
  }

  private final Kind kind;

  public InferenceException(Kind kind, String message) {
    this(kind, message, null);
  }

  public InferenceException(Kind kind, String message, Throwable cause) {
    super(message, cause, false, cause != null);
    this.kind = Objects.requireNonNull(kind, "kind");
  }

  public Kind kind() {
    return kind;
  }

  public static InferenceException invalid(String message) {
    return new InferenceException(Kind.INVALID_INPUT, message);
  }

  public static InferenceException notFound(String message) {
    return new InferenceException(Kind.NOT_FOUND, message);
  }

  public static InferenceException unavailable(String message) {
    return new InferenceException(Kind.UNAVAILABLE, message);
  }

  public static InferenceException deadlineExceeded(String message) {
    return new InferenceException(Kind.DEADLINE_EXCEEDED, message);
  }
}
