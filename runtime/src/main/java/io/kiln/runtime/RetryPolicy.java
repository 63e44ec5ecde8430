package io.kiln.runtime;

import java.time.Duration;
import java.util.Objects;

/**
 * A named, immutable retry policy: how many attempts an operation gets and how long each retry waits. The one
 * implementation of retry and backoff arithmetic in Kiln; every component that retries uses a named policy of the
 * catalogue below, or one derived from it when the user configures a count ({@link #withMaxRetries}).
 *
 * <p>Attempts count the first try: {@code maxAttempts} 1 is never retried, {@link #UNLIMITED} is retried as often as
 * it fails. Retries are numbered from 1 (retry {@code n} is attempt {@code n + 1}); retry {@code n} waits
 * {@code min(maxBackoff, initialBackoff * multiplier^(n - 1))}, no wait for {@code n <= 0}. No jitter: every
 * policy retries against one target (a re-created actor, a re-queued request), never a herd of clients.
 *
 * @param name a short name for logs and status, e.g. {@code actor-restart}
 * @param maxAttempts attempts in all, the first included: at least 1, or {@link #UNLIMITED}
 * @param initialBackoff the wait before the first retry; zero = retry at once
 * @param multiplier what each further retry multiplies the wait by; at least 1 (1 = a fixed wait)
 * @param maxBackoff the longest a retry waits; at least {@code initialBackoff}
 */
public record RetryPolicy(String name, int maxAttempts, Duration initialBackoff, double multiplier,
                          Duration maxBackoff) {

  /** {@code maxAttempts} (and {@link #maxRetries()}) of a policy that retries as often as the operation fails. */
  public static final int UNLIMITED = -1;

  /**
   * A request whose pool manager died under it is re-sent once, at once, to the re-created manager (inference is
   * idempotent); streams are never re-sent. Used by {@code PoolClient}.
   */
  public static final RetryPolicy POOL_RESEND = immediate("pool-resend", 2);
  /**
   * A request whose worker failed under it is queued again once, ahead of the queue, before it fails; the
   * default of a pool's {@code maxRequeues}. Used by the pool dispatcher.
   */
  public static final RetryPolicy WORKER_REQUEUE = immediate("worker-requeue", 2);
  /**
   * An actor that died with restarts left runs its constructor again: at once after a live incarnation failed,
   * else 100 ms doubled per construction failed in a row, up to 5 s (a crash loop costs a few attempts a minute).
   * Its attempts are the default {@code max_restarts} (0: no restart) plus one; pool workers, Python ones included,
   * restart under it with their {@code workerMaxRestarts}.
   */
  public static final RetryPolicy ACTOR_RESTART = new RetryPolicy("actor-restart", 1, Duration.ofMillis(100), 2,
      Duration.ofSeconds(5));
  /**
   * {@link #ACTOR_RESTART} with the default {@code max_restarts} of a deployment's pool workers (3): a worker
   * whose model call, load or process (a Python worker's included) died is restarted, reloading its model.
   */
  public static final RetryPolicy WORKER_RESTART = ACTOR_RESTART.withMaxRetries(3);
  /**
   * A call that was running when its actor died is run again on the restarted actor; the default
   * {@code max_task_retries} (0: not re-run; a call that never started is re-queued without using one).
   */
  public static final RetryPolicy ACTOR_CALL_RETRY = immediate("actor-call-retry", 1);
  /** A task that failed for a system reason (its node died, the bus failed) is placed again at once; 3 retries. */
  public static final RetryPolicy TASK_SYSTEM_FAILURE = immediate("task-system-failure", 4);
  /** Creating a named actor whose holder keeps dying while we wait for it gives up after 5 tries. */
  public static final RetryPolicy ACTOR_NAME_RACE = immediate("actor-name-race", 5);
  /** A placement group a node refused a bundle of (a stale view, a fragmented GPU) is placed again after 200 ms. */
  public static final RetryPolicy PLACEMENT_GROUP_REFUSED = fixed("placement-group-refused", UNLIMITED,
      Duration.ofMillis(200));
  /** Removing a placement group whose row keeps changing under the removal gives up after 10 tries. */
  public static final RetryPolicy PLACEMENT_GROUP_REMOVE = immediate("placement-group-remove", 10);
  /**
   * A job input that failed (not for node loss or a full pool) is tried again after 200 ms doubled per failure,
   * up to 5 s; 2 retries unless the job's {@code retries} says otherwise.
   */
  public static final RetryPolicy JOB_INPUT_RETRY = new RetryPolicy("job-input-retry", 3, Duration.ofMillis(200), 2,
      Duration.ofSeconds(5));
  /**
   * A job input whose node left (dispatched again at once) or whose pool was full (again after 200 ms) does not
   * use its retries: up to 1000 such redispatches per job.
   */
  public static final RetryPolicy JOB_REDISPATCH = fixed("job-redispatch", 1001, Duration.ofMillis(200));
  /**
   * A pipeline step that failed is submitted again after 100 ms doubled per failure, up to 5 s; as often as the
   * step's {@code retries} (default 0).
   */
  public static final RetryPolicy STEP_RETRY = new RetryPolicy("step-retry", 1, Duration.ofMillis(100), 2,
      Duration.ofSeconds(5));
  /** A pipeline step whose node left under it is submitted again at once, up to 8 times, without using its retries. */
  public static final RetryPolicy STEP_RESUBMIT = immediate("step-resubmit", 9);

  /** @throws IllegalArgumentException naming the first invalid argument */
  public RetryPolicy {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(initialBackoff, "initialBackoff");
    Objects.requireNonNull(maxBackoff, "maxBackoff");
    if (name.isBlank()) {
      throw new IllegalArgumentException("a retry policy needs a name");
    }
    if (maxAttempts < 1 && maxAttempts != UNLIMITED) {
      throw new IllegalArgumentException(name + ": maxAttempts must be >= 1 or " + UNLIMITED + " (unlimited), got "
          + maxAttempts);
    }
    if (initialBackoff.isNegative()) {
      throw new IllegalArgumentException(name + ": initialBackoff must not be negative, got " + initialBackoff);
    }
    if (!(multiplier >= 1) || Double.isInfinite(multiplier)) {
      throw new IllegalArgumentException(name + ": multiplier must be finite and >= 1, got " + multiplier);
    }
    if (maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException(name + ": maxBackoff " + maxBackoff + " is below initialBackoff "
          + initialBackoff);
    }
  }

  /** A policy that retries at once. */
  public static RetryPolicy immediate(String name, int maxAttempts) {
    return new RetryPolicy(name, maxAttempts, Duration.ZERO, 1, Duration.ZERO);
  }

  /** A policy whose every retry waits {@code delay}. */
  public static RetryPolicy fixed(String name, int maxAttempts, Duration delay) {
    return new RetryPolicy(name, maxAttempts, delay, 1, delay);
  }

  /** Retries allowed after the first attempt, or {@link #UNLIMITED}. */
  public int maxRetries() {
    return maxAttempts == UNLIMITED ? UNLIMITED : maxAttempts - 1;
  }

  /** Whether retry {@code n} (1 = the second attempt) may run; the first attempt ({@code n <= 0}) always may. */
  public boolean allows(int n) {
    return n <= 0 || maxAttempts == UNLIMITED || n < maxAttempts;
  }

  /** How long retry {@code n} waits before it runs; zero for {@code n <= 0}. */
  public Duration delay(int n) {
    return Duration.ofNanos(delayNanos(n));
  }

  /** {@link #delay(int)} in milliseconds, for timers. */
  public long delayMillis(int n) {
    return delayNanos(n) / 1_000_000;
  }

  private long delayNanos(int n) {
    if (n <= 0) {
      return 0;
    }
    double cap = maxBackoff.toNanos();
    // pow overflows to infinity for large n, which the cap absorbs.
    return (long) Math.min(cap, initialBackoff.toNanos() * Math.pow(multiplier, n - 1));
  }

  /** This policy with {@code attempts} attempts in all ({@link #UNLIMITED} = unlimited). */
  public RetryPolicy withMaxAttempts(int attempts) {
    return attempts == maxAttempts ? this : new RetryPolicy(name, attempts, initialBackoff, multiplier, maxBackoff);
  }

  /**
   * This policy with {@code retries} retries after the first attempt, as users configure them ({@code max_restarts},
   * {@code max_retries}, {@code retries}); {@link #UNLIMITED} = unlimited.
   *
   * @throws IllegalArgumentException when {@code retries} is below -1
   */
  public RetryPolicy withMaxRetries(int retries) {
    if (retries < UNLIMITED) {
      throw new IllegalArgumentException(name + ": retries must be >= 0 or " + UNLIMITED + " (unlimited), got "
          + retries);
    }
    return withMaxAttempts(retries == UNLIMITED ? UNLIMITED : Math.addExact(retries, 1));
  }

  /** This policy with another backoff. */
  public RetryPolicy withBackoff(Duration initial, double factor, Duration max) {
    return new RetryPolicy(name, maxAttempts, initial, factor, max);
  }

  /** E.g. {@code actor-restart (1 attempt, backoff 100 ms x2 up to 5 s)}, {@code pool-resend (2 attempts, at once)}. */
  @Override
  public String toString() {
    String attempts = maxAttempts == UNLIMITED ? "unlimited attempts" : maxAttempts + (maxAttempts == 1 ? " attempt"
        : " attempts");
    String backoff;
    if (maxBackoff.isZero()) {
      backoff = "at once";
    } else if (multiplier == 1 || initialBackoff.equals(maxBackoff)) {
      backoff = "every " + TimeoutPolicy.format(initialBackoff);
    } else {
      String x = multiplier == Math.rint(multiplier) ? Long.toString((long) multiplier) : Double.toString(multiplier);
      backoff = "backoff " + TimeoutPolicy.format(initialBackoff) + " x" + x + " up to "
          + TimeoutPolicy.format(maxBackoff);
    }
    return name + " (" + attempts + ", " + backoff + ")";
  }
}
