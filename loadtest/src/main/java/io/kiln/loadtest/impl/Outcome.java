package io.kiln.loadtest.impl;

import io.vertx.core.http.HttpClosedException;
import io.vertx.grpc.common.GrpcStatus;
import java.util.concurrent.TimeoutException;

/**
 * How one request ended, with the key it is counted under in reports ({@code http:200},
 * {@code grpc:UNAVAILABLE}, {@code timeout}, {@code connection_error}, {@code unfinished}, or a
 * {@link io.kiln.loadtest.ResponseCheck}'s key) and, optionally, an example of why, and a streamed generation's
 * {@link LlmTimings} (null for every other request). The status-only instances are interned, so counting them
 * allocates nothing.
 */
public record Outcome(String key, Kind kind, String example, LlmTimings llm) {

  /** Only SUCCESS counts as success; only CONNECTION_ERROR and UNFINISHED carry no latency. */
  public enum Kind { SUCCESS, ERROR_STATUS, TIMEOUT, CONNECTION_ERROR, UNFINISHED }

  public static final Outcome TIMEOUT = new Outcome("timeout", Kind.TIMEOUT, null);
  public static final Outcome CONNECTION_ERROR = new Outcome("connection_error", Kind.CONNECTION_ERROR, null);
  public static final Outcome UNFINISHED = new Outcome("unfinished", Kind.UNFINISHED, null);

  private static final Outcome[] HTTP = new Outcome[600];
  private static final Outcome[] GRPC = new Outcome[GrpcStatus.values().length];

  static {
    for (int s = 0; s < HTTP.length; s++) {
      HTTP[s] = new Outcome("http:" + s, s >= 200 && s < 300 ? Kind.SUCCESS : Kind.ERROR_STATUS, null);
    }
    for (GrpcStatus s : GrpcStatus.values()) {
      GRPC[s.ordinal()] = new Outcome("grpc:" + s.name(), s == GrpcStatus.OK ? Kind.SUCCESS : Kind.ERROR_STATUS, null);
    }
  }

  public Outcome(String key, Kind kind, String example) {
    this(key, kind, example, null);
  }

  public static Outcome http(int status) {
    return status >= 0 && status < HTTP.length ? HTTP[status] : new Outcome("http:" + status, Kind.ERROR_STATUS, null);
  }

  public static Outcome grpc(GrpcStatus status) {
    return GRPC[status.ordinal()];
  }

  /** A request that failed without a status: a timeout if it timed out, otherwise a connection error. */
  public static Outcome failure(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof TimeoutException || t instanceof io.netty.channel.ConnectTimeoutException) {
        return TIMEOUT;
      }
      if (t instanceof HttpClosedException) {
        break;
      }
    }
    return CONNECTION_ERROR;
  }

  /** A check's verdict on an answer: a success or a failure with an answer's status (latency meaningful). */
  public static Outcome judged(String key, boolean ok, String example) {
    return new Outcome(key, ok ? Kind.SUCCESS : Kind.ERROR_STATUS, example);
  }

  /** This outcome with {@code why} as its example. */
  public Outcome because(String why) {
    return new Outcome(key, kind, why, llm);
  }

  /** This outcome carrying a streamed generation's timings. */
  public Outcome with(LlmTimings timings) {
    return new Outcome(key, kind, example, timings);
  }

  /** {@code s} cut to 160 characters, digits masked, so that examples name kinds of failure, not one failure. */
  public static String mask(String s) {
    return s.substring(0, Math.min(160, s.length())).replaceAll("[0-9]+", "N");
  }

  public boolean ok() {
    return kind == Kind.SUCCESS;
  }

  /** Whether the latency of this request is meaningful (a timeout's is a lower bound). */
  public boolean hasLatency() {
    return kind != Kind.CONNECTION_ERROR && kind != Kind.UNFINISHED;
  }
}
