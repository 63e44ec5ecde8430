package io.kiln.deploy.node;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import java.time.Duration;
import java.util.Objects;

/**
 * Whether and how long a node warms its serving path before it reports ready (see {@link ServingNode}): it
 * drives OIP requests through its own gateway on loopback (HTTP JSON, HTTP binary tensors, gRPC) at a few
 * concurrencies and batch shapes against an internal {@code builtin:identity} pool of its own, so that the
 * JIT has compiled the request path before users' traffic arrives. The traffic ends as soon as the JIT has
 * caught up with it (its compilation goes quiet: on one loaded core after some twenty seconds, on a machine with
 * cores to spare for the compiler after a few), and at the latest after {@code duration}. Immutable.
 *
 * @param duration how long the traffic runs at most; {@link Duration#ZERO} turns the warm-up off
 * @param maxRequests the traffic stops earlier once this many requests were sent, all protocols together
 * @param model the internal model: it must take one FP32 input {@code input} of shape [-1, 64] and answer
 *     {@code output} alike ({@link #IDENTITY} does); a model that cannot serve makes the warm-up fail with a
 *     warning, and the node goes ready anyway
 */
public record WarmupOptions(Duration duration, long maxRequests, ModelSpec model) {

  /**
   * The default longest warm-up. Kiln's JIT needs ~30 s of traffic to compile the request path on one loaded core
   * (measured on the development box, the node pinned to one core), far less with a spare core; a warm-up ends
   * when the JIT goes quiet. 10 s keeps {@code kiln up} quick; benchmarks and one-core nodes ask for 30.
   */
  public static final Duration DEFAULT_DURATION = Duration.ofSeconds(10);
  /** A bound for very fast machines; the JIT settles long before on the ones measured. */
  public static final long DEFAULT_MAX_REQUESTS = 200_000;
  /** The longest warm-up accepted. */
  public static final Duration MAX_DURATION = Duration.ofMinutes(10);
  /** {@code builtin:identity}, FP32 [-1, 64] in and out. */
  public static final ModelSpec IDENTITY = ModelSpec.builder().uri("builtin:identity").engine(ModelSpec.ENGINE_BUILTIN)
      .input("input", DataType.FP32, -1, 64).output("output", DataType.FP32, -1, 64).warmupBatchSizes(1, 8).build();

  /**
   * The node warms up until the JIT has caught up, for {@link #DEFAULT_DURATION} or
   * {@link #DEFAULT_MAX_REQUESTS} at most.
   */
  public static final WarmupOptions DEFAULT = new WarmupOptions(DEFAULT_DURATION, DEFAULT_MAX_REQUESTS, IDENTITY);
  /** No warm-up: the node is ready as soon as its gateway listens (and its models are). */
  public static final WarmupOptions OFF = new WarmupOptions(Duration.ZERO, DEFAULT_MAX_REQUESTS, IDENTITY);

  /** @throws IllegalArgumentException naming the bad value */
  public WarmupOptions {
    Objects.requireNonNull(duration, "duration");
    Objects.requireNonNull(model, "model");
    if (duration.isNegative() || duration.compareTo(MAX_DURATION) > 0) {
      throw new IllegalArgumentException("warm-up duration must be in 0.." + MAX_DURATION.toSeconds() + " s, got "
          + duration.toMillis() + " ms");
    }
    if (maxRequests < 1) {
      throw new IllegalArgumentException("warm-up requests must be at least 1, got " + maxRequests);
    }
  }

  /** The default warm-up, for {@code duration} (zero: off). */
  public static WarmupOptions of(Duration duration) {
    return new WarmupOptions(duration, DEFAULT_MAX_REQUESTS, IDENTITY);
  }

  public boolean enabled() {
    return !duration.isZero();
  }

  public WarmupOptions withMaxRequests(long n) {
    return new WarmupOptions(duration, n, model);
  }

  public WarmupOptions withModel(ModelSpec m) {
    return new WarmupOptions(duration, maxRequests, m);
  }
}
