package io.kiln.deploy.node;

import io.kiln.pools.DataType;
import io.kiln.pools.ModelSpec;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Whether and how long a node warms its serving path before it reports ready (see {@link ServingNode}): it
 * drives OIP requests through its own gateway on loopback (HTTP JSON, HTTP binary tensors, gRPC) at a few
 * concurrencies and batch shapes against an internal {@code builtin:identity} pool of its own, so that the
 * JIT has compiled the request path before users' traffic arrives, then (given {@code deployments}) drives the
 * user's own deployments alike. The traffic ends as soon as its throughput is flat and the JIT has caught up with
 * it (its compilation goes quiet: on one loaded core after some twenty seconds, on a machine with cores to spare
 * for the compiler after a few), and at the latest after {@code duration}. Immutable.
 *
 * @param duration how long the traffic runs at most; {@link Duration#ZERO} turns the warm-up off
 * @param maxRequests the traffic stops earlier once this many requests were sent, all protocols together
 * @param model the internal model: it must take one FP32 input {@code input} of shape [-1, 64] and answer
 *     {@code output} alike ({@link #IDENTITY} does); a model that cannot serve makes the warm-up fail with a
 *     warning, and the node goes ready anyway
 * @param deployments the user's deployments to warm too (those of the node's deployment file): once this node's
 *     pool of each is ready (or {@code loadTimeout} passed), the node drives synthetic requests built from each
 *     model's signature through its real ports to those very models ({@link ModelsWarmup}), for {@code duration}
 *     at most, until flat, before it reports ready; empty: only the internal model is warmed
 * @param loadTimeout how long the warm-up waits for this node's pools of {@code deployments} to be ready; one
 *     that is not ready by then (or whose deployment failed) is named in the report, and the node goes ready
 */
public record WarmupOptions(Duration duration, long maxRequests, ModelSpec model, List<String> deployments,
                            Duration loadTimeout) {

  /**
   * The default longest warm-up of {@code kiln up}. Kiln's JIT needs ~30 s of traffic to compile the request path on
   * one loaded core (measured on the development box, the node pinned to one core), far less with a spare core; a
   * warm-up ends when its throughput is flat and the JIT quiet. 10 s keeps {@code kiln up} quick.
   */
  public static final Duration DEFAULT_DURATION = Duration.ofSeconds(10);
  /**
   * The default longest warm-up of {@code kiln start} (production, Kubernetes): long enough for one core's JIT to
   * catch up, so that a pod that turns ready serves at its warm rate; it ends earlier once flat.
   */
  public static final Duration PRODUCTION_DURATION = Duration.ofSeconds(40);
  /** The default wait for this node's pools of the user's deployments (model loading included). */
  public static final Duration DEFAULT_LOAD_TIMEOUT = Duration.ofSeconds(120);
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

  /** Options that warm the internal model only. */
  public WarmupOptions(Duration duration, long maxRequests, ModelSpec model) {
    this(duration, maxRequests, model, List.of(), DEFAULT_LOAD_TIMEOUT);
  }

  /** @throws IllegalArgumentException naming the bad value */
  public WarmupOptions {
    Objects.requireNonNull(duration, "duration");
    Objects.requireNonNull(model, "model");
    deployments = List.copyOf(deployments);
    Objects.requireNonNull(loadTimeout, "loadTimeout");
    if (loadTimeout.isNegative() || loadTimeout.compareTo(MAX_DURATION) > 0) {
      throw new IllegalArgumentException("warm-up load timeout must be in 0.." + MAX_DURATION.toSeconds() + " s, got "
          + loadTimeout.toMillis() + " ms");
    }
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
    return new WarmupOptions(duration, n, model, deployments, loadTimeout);
  }

  public WarmupOptions withModel(ModelSpec m) {
    return new WarmupOptions(duration, maxRequests, m, deployments, loadTimeout);
  }

  /** These options warming the user's {@code names} deployments too. */
  public WarmupOptions withDeployments(List<String> names) {
    return new WarmupOptions(duration, maxRequests, model, names, loadTimeout);
  }

  public WarmupOptions withLoadTimeout(Duration t) {
    return new WarmupOptions(duration, maxRequests, model, deployments, t);
  }
}
