package io.kiln.runtime;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How an actor is created: immutable, validated when built. Defaults follow Ray's: owned, no restarts,
 * no task retries, serial execution on a thread of its own, DEFAULT placement, no resources.
 *
 * @param name unique name within the namespace, or null for an anonymous actor
 * @param namespace namespace of the name ({@link #DEFAULT_NAMESPACE} by default)
 * @param lifetime owned (dies with its creator) or detached
 * @param getIfExists with a name: return the live actor of that name instead of failing; the constructor
 *     arguments are then ignored (Ray's {@code get_if_exists})
 * @param resources reserved on the chosen node for the actor's whole life
 * @param strategy where to place it
 * @param maxConcurrency how many calls may be in progress at once; 1 = strictly serial
 * @param maxRestarts times the constructor is re-run after a fatal error or kill; -1 = unlimited
 * @param maxTaskRetries times a call in progress when the actor died is re-sent to the restarted actor
 * @param mode whether methods run on threads of their own or on the event loop
 * @param maxPendingCalls calls waiting in the mailbox beyond which new calls are refused at once
 * @param placementTimeout how long creation may wait for resources to free up
 */
public record ActorOptions(String name, String namespace, Lifetime lifetime, boolean getIfExists,
                           Resources resources, SchedulingStrategy strategy, int maxConcurrency,
                           int maxRestarts, int maxTaskRetries, ExecutionMode mode, int maxPendingCalls,
                           Duration placementTimeout) {

  public static final String DEFAULT_NAMESPACE = "default";
  public static final int DEFAULT_MAX_CONCURRENCY = 1;
  /** {@link RetryPolicy#ACTOR_RESTART}'s: no restart. */
  public static final int DEFAULT_MAX_RESTARTS = RetryPolicy.ACTOR_RESTART.maxRetries();
  /** {@link RetryPolicy#ACTOR_CALL_RETRY}'s: a call running when its actor died is not re-run. */
  public static final int DEFAULT_MAX_TASK_RETRIES = RetryPolicy.ACTOR_CALL_RETRY.maxRetries();
  public static final int DEFAULT_MAX_PENDING_CALLS = 100_000;
  public static final Duration DEFAULT_PLACEMENT_TIMEOUT = Duration.ofSeconds(60);
  /** Names are addresses in logs and on the event bus: keep them short and printable. */
  public static final int MAX_NAME_LENGTH = 256;

  public static final ActorOptions DEFAULT = builder().build();

  public ActorOptions {
    if (name != null) {
      checkName("name", name);
    }
    checkName("namespace", namespace);
    Objects.requireNonNull(lifetime, "lifetime");
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(strategy, "strategy");
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(placementTimeout, "placementTimeout");
    if (getIfExists && name == null) {
      throw new IllegalArgumentException("getIfExists needs a name");
    }
    if (maxConcurrency < 1) {
      throw new IllegalArgumentException("maxConcurrency must be >= 1, got " + maxConcurrency);
    }
    if (maxRestarts < -1) {
      throw new IllegalArgumentException("maxRestarts must be >= -1 (-1 = unlimited), got " + maxRestarts);
    }
    if (maxTaskRetries < -1) {
      throw new IllegalArgumentException("maxTaskRetries must be >= -1 (-1 = unlimited), got " + maxTaskRetries);
    }
    if (maxPendingCalls < 1) {
      throw new IllegalArgumentException("maxPendingCalls must be >= 1, got " + maxPendingCalls);
    }
    if (placementTimeout.isNegative()) {
      throw new IllegalArgumentException("placementTimeout must not be negative");
    }
  }

  public Optional<String> optionalName() {
    return Optional.ofNullable(name);
  }

  /** {@link RetryPolicy#ACTOR_RESTART} with this actor's {@code maxRestarts}: when and how often it restarts. */
  public RetryPolicy restartPolicy() {
    return RetryPolicy.ACTOR_RESTART.withMaxRetries(maxRestarts);
  }

  /** {@link RetryPolicy#ACTOR_CALL_RETRY} with {@code maxTaskRetries}: how often a call its death broke is re-run. */
  public RetryPolicy callRetryPolicy() {
    return RetryPolicy.ACTOR_CALL_RETRY.withMaxRetries(maxTaskRetries);
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    return new Builder(this);
  }

  private static void checkName(String what, String value) {
    Objects.requireNonNull(value, what);
    if (value.isEmpty() || value.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(what + " must be 1.." + MAX_NAME_LENGTH + " characters");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        throw new IllegalArgumentException(what + " must be printable ASCII without spaces: '" + value + "'");
      }
    }
  }

  /** Mutable builder; {@link #build()} validates. */
  public static final class Builder {
    private String name;
    private String namespace = DEFAULT_NAMESPACE;
    private Lifetime lifetime = Lifetime.OWNED;
    private boolean getIfExists;
    private Resources resources = Resources.NONE;
    private SchedulingStrategy strategy = SchedulingStrategy.DEFAULT;
    private int maxConcurrency = DEFAULT_MAX_CONCURRENCY;
    private int maxRestarts = DEFAULT_MAX_RESTARTS;
    private int maxTaskRetries = DEFAULT_MAX_TASK_RETRIES;
    private ExecutionMode mode = ExecutionMode.WORKER;
    private int maxPendingCalls = DEFAULT_MAX_PENDING_CALLS;
    private Duration placementTimeout = DEFAULT_PLACEMENT_TIMEOUT;

    private Builder() {
    }

    private Builder(ActorOptions o) {
      name = o.name;
      namespace = o.namespace;
      lifetime = o.lifetime;
      getIfExists = o.getIfExists;
      resources = o.resources;
      strategy = o.strategy;
      maxConcurrency = o.maxConcurrency;
      maxRestarts = o.maxRestarts;
      maxTaskRetries = o.maxTaskRetries;
      mode = o.mode;
      maxPendingCalls = o.maxPendingCalls;
      placementTimeout = o.placementTimeout;
    }

    public Builder name(String name) {
      this.name = name;
      return this;
    }

    public Builder namespace(String namespace) {
      this.namespace = namespace;
      return this;
    }

    public Builder lifetime(Lifetime lifetime) {
      this.lifetime = lifetime;
      return this;
    }

    public Builder detached() {
      return lifetime(Lifetime.DETACHED);
    }

    public Builder getIfExists(boolean getIfExists) {
      this.getIfExists = getIfExists;
      return this;
    }

    public Builder resources(Resources resources) {
      this.resources = resources;
      return this;
    }

    public Builder strategy(SchedulingStrategy strategy) {
      this.strategy = strategy;
      return this;
    }

    public Builder maxConcurrency(int maxConcurrency) {
      this.maxConcurrency = maxConcurrency;
      return this;
    }

    public Builder maxRestarts(int maxRestarts) {
      this.maxRestarts = maxRestarts;
      return this;
    }

    public Builder maxTaskRetries(int maxTaskRetries) {
      this.maxTaskRetries = maxTaskRetries;
      return this;
    }

    public Builder mode(ExecutionMode mode) {
      this.mode = mode;
      return this;
    }

    public Builder maxPendingCalls(int maxPendingCalls) {
      this.maxPendingCalls = maxPendingCalls;
      return this;
    }

    public Builder placementTimeout(Duration placementTimeout) {
      this.placementTimeout = placementTimeout;
      return this;
    }

    public ActorOptions build() {
      return new ActorOptions(name, namespace, lifetime, getIfExists, resources, strategy, maxConcurrency,
          maxRestarts, maxTaskRetries, mode, maxPendingCalls, placementTimeout);
    }
  }
}
