package io.kiln.pipelines;

/** A pipeline request was refused; {@link #kind()} says why (and maps to an HTTP status). */
public class PipelineException extends RuntimeException {

  /** Failure classes, each with its HTTP status. */
  public enum Kind {
    INVALID_INPUT(400), NOT_FOUND(404), OVERLOADED(503), UNAVAILABLE(503);

    private final int httpStatus;

    Kind(int httpStatus) {
      this.httpStatus = httpStatus;
    }

    public int httpStatus() {
      return httpStatus;
    }
  }

  private final Kind kind;

  public PipelineException(Kind kind, String message) {
    super(message);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }
}
