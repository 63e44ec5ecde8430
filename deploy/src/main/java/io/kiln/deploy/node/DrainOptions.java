package io.kiln.deploy.node;

import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * How a node drains before it shuts down ({@link ServingNode#drain}). Immutable.
 *
 * @param grace the longest the drain waits for the node to go idle; zero = no drain (close at once)
 * @param linger the least it waits, so that routers on other nodes see its pools draining before they go
 *     (capped at {@code grace})
 * @param poll how often it looks whether the node is idle
 * @param nanoClock the clock grace and linger are measured on
 */
public record DrainOptions(Duration grace, Duration linger, Duration poll, LongSupplier nanoClock) {

  /** What {@code kiln start} waits by default ({@code --drain-grace}, {@code KILN_DRAIN_GRACE}). */
  public static final Duration DEFAULT_GRACE = Duration.ofSeconds(25);
  public static final Duration DEFAULT_LINGER = Duration.ofSeconds(1);
  public static final Duration DEFAULT_POLL = Duration.ofMillis(50);
  /** No drain: the node closes at once, as before drains existed. */
  public static final DrainOptions NONE = of(Duration.ZERO);

  public DrainOptions {
    Objects.requireNonNull(grace, "grace");
    Objects.requireNonNull(linger, "linger");
    Objects.requireNonNull(poll, "poll");
    Objects.requireNonNull(nanoClock, "nanoClock");
    if (grace.isNegative() || linger.isNegative()) {
      throw new IllegalArgumentException("drain grace and linger must not be negative, got " + grace + " and " + linger);
    }
    if (poll.isNegative() || poll.isZero()) {
      throw new IllegalArgumentException("drain poll must be positive, got " + poll);
    }
    linger = linger.compareTo(grace) > 0 ? grace : linger;
  }

  /** {@code grace} with the default linger and poll, on {@link System#nanoTime()}. */
  public static DrainOptions of(Duration grace) {
    return new DrainOptions(grace, DEFAULT_LINGER, DEFAULT_POLL, System::nanoTime);
  }

  public DrainOptions withLinger(Duration l) {
    return new DrainOptions(grace, l, poll, nanoClock);
  }

  public DrainOptions withClock(LongSupplier clock) {
    return new DrainOptions(grace, linger, poll, clock);
  }

  /** Whether the node drains at all. */
  public boolean enabled() {
    return !grace.isZero();
  }
}
