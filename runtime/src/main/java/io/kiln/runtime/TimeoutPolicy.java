package io.kiln.runtime;

import java.time.Duration;
import java.util.Objects;

/**
 * A named, immutable timeout: how long Kiln waits for one thing before it gives up on it. The catalogue below holds
 * the fixed waits of Kiln's internal calls; timeouts users configure (a request's, a task's, a queue's) are theirs.
 *
 * @param name a short name for logs, e.g. {@code pool-call-grace}
 * @param timeout how long; positive
 */
public record TimeoutPolicy(String name, Duration timeout) {

  /**
   * A call to a pool manager times out this long after the request's own deadline, so that the pool's own
   * DEADLINE_EXCEEDED answer arrives first. Used by {@code PoolClient}.
   */
  public static final TimeoutPolicy POOL_CALL_GRACE = new TimeoutPolicy("pool-call-grace", Duration.ofSeconds(5));
  /** A pool's control calls (scale, drain, load a model) may take this long: they wait for model loads. */
  public static final TimeoutPolicy POOL_CONTROL = new TimeoutPolicy("pool-control", Duration.ofMinutes(30));
  /**
   * Before an actor is created on another node, that node's agent must answer a ping within this; a member whose
   * event bus cannot be reached refuses the placement instead of swallowing the creation request.
   */
  public static final TimeoutPolicy REMOTE_CREATE_PING = new TimeoutPolicy("remote-create-ping",
      Duration.ofSeconds(10));
  /** An actor's creation on another node may take this long to answer (its constructor may load a model). */
  public static final TimeoutPolicy REMOTE_CREATE_REPLY = new TimeoutPolicy("remote-create-reply",
      Duration.ofMinutes(30));
  /** Connecting to the server of a model download ({@code https://}, {@code s3://}) may take this long. */
  public static final TimeoutPolicy MODEL_DOWNLOAD_CONNECT = new TimeoutPolicy("model-download-connect",
      Duration.ofSeconds(30));
  /**
   * A model download may go this long without a byte (the answer's headers, then each part of the body) before it is
   * abandoned; {@code kiln.model.readTimeoutMs} overrides it.
   */
  public static final TimeoutPolicy MODEL_DOWNLOAD_READ = new TimeoutPolicy("model-download-read",
      Duration.ofSeconds(60));

  /**
   * A node shutting down removes its registry entries and its row from the cluster's maps within this, then leaves the
   * cluster whether or not that is done: an operation on a partition whose owner has just died can wait far longer,
   * and the members that stay free what a gone node left.
   */
  public static final TimeoutPolicy LEAVE_CLEANUP = new TimeoutPolicy("leave-cleanup", Duration.ofSeconds(10));

  /** @throws IllegalArgumentException naming the first invalid argument */
  public TimeoutPolicy {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(timeout, "timeout");
    if (name.isBlank()) {
      throw new IllegalArgumentException("a timeout policy needs a name");
    }
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(name + ": timeout must be positive, got " + timeout);
    }
  }

  /** The timeout in milliseconds. */
  public long toMillis() {
    return timeout.toMillis();
  }

  /** This policy with another timeout. */
  public TimeoutPolicy withTimeout(Duration value) {
    return new TimeoutPolicy(name, value);
  }

  /** E.g. {@code pool-call-grace (5 s)}. */
  @Override
  public String toString() {
    return name + " (" + format(timeout) + ")";
  }

  /** {@code 250 ms}, {@code 5 s}, {@code 1.5 s}, {@code 30 min}. */
  static String format(Duration d) {
    long ms = d.toMillis();
    if (ms < 1000) {
      return ms == 0 && !d.isZero() ? d.toNanos() + " ns" : ms + " ms";
    }
    if (ms % 60_000 == 0) {
      return ms / 60_000 + " min";
    }
    return ms % 1000 == 0 ? ms / 1000 + " s" : ms / 1000.0 + " s";
  }
}
