package io.kiln.runtime;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A placement group to create: bundles of resources reserved together, all or none, by a strategy.
 * Immutable, validated when built. Defaults follow Ray's: PACK, anonymous, owned by the creating node, no
 * timeout (the group waits as long as it takes).
 *
 * @param bundles the resources of each bundle, 1..{@link #MAX_BUNDLES}; each must ask for something
 * @param strategy how the bundles are spread over nodes
 * @param name unique within the namespace, or null
 * @param namespace namespace of the name
 * @param lifetime owned (removed when the creating node leaves the cluster) or detached (until removed)
 * @param timeout how long the group may stay PENDING or RESCHEDULING before it is FAILED; zero = forever
 */
public record PlacementGroupOptions(List<Resources> bundles, PlacementGroupStrategy strategy, String name,
                                    String namespace, Lifetime lifetime, Duration timeout) {

  /** A sanity bound so one request cannot make a group table row of unbounded size. */
  public static final int MAX_BUNDLES = 1024;
  public static final PlacementGroupStrategy DEFAULT_STRATEGY = PlacementGroupStrategy.PACK;

  public PlacementGroupOptions {
    Objects.requireNonNull(bundles, "bundles");
    Objects.requireNonNull(strategy, "strategy");
    Objects.requireNonNull(lifetime, "lifetime");
    Objects.requireNonNull(timeout, "timeout");
    bundles = List.copyOf(bundles);
    if (bundles.isEmpty() || bundles.size() > MAX_BUNDLES) {
      throw new IllegalArgumentException("bundles must hold 1.." + MAX_BUNDLES + " bundles, got " + bundles.size());
    }
    for (int i = 0; i < bundles.size(); i++) {
      if (bundles.get(i).isZero()) {
        throw new IllegalArgumentException("bundles[" + i + "] asks for no resources");
      }
    }
    // The same rules as actors' names: they are keys in the cluster and appear in logs.
    ActorOptions.builder().namespace(namespace).name(name).build();
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must not be negative");
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Mutable builder; {@link #build()} validates. */
  public static final class Builder {
    private final List<Resources> bundles = new ArrayList<>();
    private PlacementGroupStrategy strategy = DEFAULT_STRATEGY;
    private String name;
    private String namespace = ActorOptions.DEFAULT_NAMESPACE;
    private Lifetime lifetime = Lifetime.OWNED;
    private Duration timeout = Duration.ZERO;

    private Builder() {
    }

    /** Adds one bundle (its index is the number of bundles added before it). */
    public Builder bundle(Resources bundle) {
      bundles.add(Objects.requireNonNull(bundle, "bundle"));
      return this;
    }

    public Builder bundles(List<Resources> all) {
      all.forEach(this::bundle);
      return this;
    }

    public Builder strategy(PlacementGroupStrategy strategy) {
      this.strategy = strategy;
      return this;
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

    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    public PlacementGroupOptions build() {
      return new PlacementGroupOptions(bundles, strategy, name, namespace, lifetime, timeout);
    }
  }
}
