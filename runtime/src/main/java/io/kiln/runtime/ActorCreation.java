package io.kiln.runtime;

import java.util.concurrent.CompletionStage;
import java.util.function.UnaryOperator;

/**
 * A pending actor creation: set options fluently, then {@link #remote()}. Not thread-safe; use once.
 *
 * <pre>{@code
 * runtime.actor(PoolManager::new, config)
 *     .name("kiln/pool/mlp@1/" + node).namespace("kiln").detached().getIfExists()
 *     .strategy(SchedulingStrategy.onNode(node))
 *     .remote();
 * }</pre>
 *
 * @param <T> the actor's class
 */
public interface ActorCreation<T> {

  ActorCreation<T> options(ActorOptions options);

  /** Edits the options so far, e.g. {@code with(b -> b.maxRestarts(3))}. */
  ActorCreation<T> with(UnaryOperator<ActorOptions.Builder> edit);

  default ActorCreation<T> name(String name) {
    return with(b -> b.name(name));
  }

  default ActorCreation<T> namespace(String namespace) {
    return with(b -> b.namespace(namespace));
  }

  default ActorCreation<T> detached() {
    return with(ActorOptions.Builder::detached);
  }

  default ActorCreation<T> getIfExists() {
    return with(b -> b.getIfExists(true));
  }

  default ActorCreation<T> resources(Resources resources) {
    return with(b -> b.resources(resources));
  }

  default ActorCreation<T> strategy(SchedulingStrategy strategy) {
    return with(b -> b.strategy(strategy));
  }

  default ActorCreation<T> maxConcurrency(int n) {
    return with(b -> b.maxConcurrency(n));
  }

  default ActorCreation<T> maxRestarts(int n) {
    return with(b -> b.maxRestarts(n));
  }

  default ActorCreation<T> maxTaskRetries(int n) {
    return with(b -> b.maxTaskRetries(n));
  }

  default ActorCreation<T> mode(ExecutionMode mode) {
    return with(b -> b.mode(mode));
  }

  /**
   * Creates the actor (or, with get-if-exists, finds the live one of that name). The future completes
   * with a handle once the actor is ALIVE, and fails with {@link InfeasibleResourcesException} at once
   * when no node can ever host it, {@link PlacementTimeoutException} after waiting too long for
   * resources, {@link ActorNameTakenException} when the name is held and get-if-exists is off, or
   * {@link ActorDiedException} when the constructor failed with no restarts left.
   */
  CompletionStage<ActorHandle<T>> remote();
}
