package io.kiln.runtime.impl;

import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The names of the live named actors this node hosts, kept true against a registry that lost them. While a partition
 * splits the cluster, the other side's leader frees the names of this node's actors (this node is gone in its view),
 * though they live on here; when the partition heals, Hazelcast's merge puts this side's entries back only where the
 * key is still free, and a get-or-create racing that merge (the leader asking this node for a pool manager it sees
 * missing) could otherwise make a second actor of a name whose first still lives here. So:
 * <ul>
 *   <li>a creation arriving for a name a live actor here holds under another id does not make a second one: the
 *       creator's PENDING claim is replaced by the live actor's entry, and the creator gets the live actor
 *       ({@link #holder}, {@link #reclaim});
 *   <li>when a member joins (a heal shows as the other side's members joining), every live named actor here checks
 *       its entry ({@link #reassert}): one absent is put back; one held by another actor means this one lost: the
 *       registry's holder wins (the merged cluster's entry, the larger side's), and this one dies, its calls failed
 *       with {@code ActorDiedException}, so no name is served twice.
 * </ul>
 * Thread-safe; non-blocking.
 */
final class HeldNames {

  private static final Logger LOG = LoggerFactory.getLogger(HeldNames.class);
  /** How long {@link #reassert} waits for a creation in flight under a name held here to settle. */
  static final Duration SETTLE = Duration.ofSeconds(60);
  private static final int MAX_CHECKS = 3;

  private final ActorRegistry registry;
  private final LocalActors cells;
  /** The node agent's: the registry entry each named cell here last wrote, by actor id. */
  private final Map<String, String> registryJson;
  /** Kills a cell that lost its name (the node agent's, which re-reads the entry first). */
  private final BiConsumer<ActorCell, String> nameLost;

  HeldNames(ActorRegistry registry, LocalActors cells, Map<String, String> registryJson,
            BiConsumer<ActorCell, String> nameLost) {
    this.registry = registry;
    this.cells = cells;
    this.registryJson = registryJson;
    this.nameLost = nameLost;
  }

  /** The live cell here that holds {@code key} under an id other than {@code actorId} (null: any id), if any. */
  Optional<ActorCell> holder(String key, String actorId) {
    for (ActorCell c : cells.cells()) {
      if (c.options.name() != null && !c.actorId.equals(actorId) && c.info().state() == ActorState.ALIVE
          && ActorRecord.key(c.options.namespace(), c.options.name()).equals(key)
          && registryJson.containsKey(c.actorId)) {
        return Optional.of(c);
      }
    }
    return Optional.empty();
  }

  /**
   * Gives {@code key} back to the live cell {@code live} in place of a creator's PENDING claim ({@code pendingJson},
   * or none). Completes with the live cell's info if the entry is now its own, else empty (someone else changed it).
   */
  CompletionStage<Optional<ActorInfo>> reclaim(String key, ActorCell live, String pendingJson) {
    String own = registryJson.get(live.actorId);
    if (own == null) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    CompletionStage<Boolean> written = pendingJson != null ? registry.replace(key, pendingJson, own)
        : registry.putIfAbsent(ActorRegistry.decode(own), own).thenApply(Optional::isEmpty);
    return written.thenApply(ok -> {
      if (ok) {
        LOG.warn("actor {} still holds its name {} here: a creation of that name gets it instead of a second one",
            live.actorId, key);
      }
      return ok ? Optional.of(live.info()) : Optional.<ActorInfo>empty();
    });
  }

  /**
   * Checks every live named cell's registry entry: puts back one that is absent; a cell whose name another actor holds
   * (not merely claims: a PENDING claim is waited out) dies.
   */
  void reassert() {
    for (ActorCell c : cells.cells()) {
      String own = registryJson.get(c.actorId);
      if (c.options.name() != null && own != null && c.info().state() == ActorState.ALIVE) {
        check(c, ActorRecord.key(c.options.namespace(), c.options.name()), own, 1);
      }
    }
  }

  private void check(ActorCell c, String key, String own, int attempt) {
    // Another's PENDING claim is a creation in flight, not a holder: perhaps of this very name on this node, which
    // then gets this actor (reclaim). Its outcome decides.
    registry.await(key, r -> r.state() != ActorState.PENDING || r.actorId().equals(c.actorId))
        .toCompletableFuture().orTimeout(SETTLE.toMillis(), TimeUnit.MILLISECONDS)
        .thenCompose(current -> current.isPresent() ? CompletableFuture.completedFuture(current)
            : registry.putIfAbsent(ActorRegistry.decode(own), own).thenApply(held -> {
              if (held.isEmpty()) {
                LOG.info("put back the registry entry of {} ({}), which the other side of a partition had freed", key,
                    c.actorId);
              }
              return held;
            }))
        .whenComplete((holder, err) -> {
          if (err != null) {
            LOG.warn("could not check the registry entry of {} ({}): {}", key, c.actorId, err.toString());
          } else if (holder.isEmpty() || holder.get().actorId().equals(c.actorId)) {
            return; // its own
          } else if (holder.get().state() == ActorState.PENDING && attempt < MAX_CHECKS) {
            check(c, key, own, attempt + 1); // a claim slipped in before the put: wait that one out too
          } else {
            nameLost.accept(c, key);
          }
        });
  }
}
