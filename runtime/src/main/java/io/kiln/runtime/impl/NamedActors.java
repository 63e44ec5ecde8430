package io.kiln.runtime.impl;

import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.SchedulingStrategy;
import io.vertx.core.Future;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link NodeAgent}'s named actors in the actor registry: owns the registry JSON this node last wrote for
 * each hosted actor (the expected value of its next compare-and-set), mirrors each named cell's state into
 * the registry, frees the name when the cell dies, and stops a cell whose name was freed or taken under it.
 * The names of live actors kept against a registry that lost them (a healed partition) are {@link HeldNames}.
 *
 * <p>Thread-safe: called from cells' verticles and the agent's context; the JSON map is concurrent and the
 * registry's answers arrive on whatever thread completes them.
 */
final class NamedActors {

  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

  private final String nodeId;
  private final ActorRegistry registry;
  private final BooleanSupplier closing;
  private final Map<String, String> registryJson = new ConcurrentHashMap<>();
  private final HeldNames names;

  /** @param closing whether the node is shutting down (a lost compare-and-set then is no lost name) */
  NamedActors(String nodeId, ActorRegistry registry, LocalActors cells, BooleanSupplier closing) {
    this.nodeId = nodeId;
    this.registry = registry;
    this.closing = closing;
    this.names = new HeldNames(registry, cells, registryJson,
        (cell, key) -> nameLost(cell, key, "while a partition split the cluster"));
  }

  /** The live actor here holding name {@code key} other than {@code actorId}: {@link HeldNames#holder}. */
  Optional<ActorCell> holder(String key, String actorId) {
    return names.holder(key, actorId);
  }

  /** {@link HeldNames#reclaim}. */
  CompletionStage<Optional<ActorInfo>> reclaim(String key, ActorCell live, String pendingJson) {
    return names.reclaim(key, live, pendingJson);
  }

  /** The PENDING record the creator wrote for a new actor here: what its first state write replaces. */
  void created(String actorId, String pendingRecordJson) {
    if (pendingRecordJson != null) {
      registryJson.put(actorId, pendingRecordJson);
    }
  }

  /** Mirrors a named actor's state into the registry; only the hosting node writes after PENDING. */
  void stateChanged(ActorCell cell) {
    String name = cell.options.name();
    if (name == null) {
      return;
    }
    String key = ActorRecord.key(cell.options.namespace(), name);
    String expected = registryJson.get(cell.actorId);
    ActorRecord rec = record(cell, expected);
    String json = ActorRegistry.encode(rec);
    registryJson.put(cell.actorId, json);
    CompletionStage<Boolean> written = expected == null
        ? registry.putIfAbsent(rec, json).thenApply(Optional::isEmpty)
        : registry.replace(key, expected, json);
    written.whenComplete((ok, err) -> {
      if (err == null && !ok && !closing.getAsBoolean()) {
        nameLost(cell, key, "while it was being created");
      }
    });
  }

  /** Frees a dead cell's name, if it had one and this node still wrote its entry last. */
  Future<Boolean> died(ActorCell cell) {
    String json = registryJson.remove(cell.actorId);
    return cell.options.name() != null && json != null
        ? Future.fromCompletionStage(registry.remove(ActorRecord.key(cell.options.namespace(),
            cell.options.name()), json))
        : Future.succeededFuture(true);
  }

  /** The live actor here holding name {@code key} (namespace/name), if any: {@link HeldNames#holder}. */
  Optional<ActorInfo> heldHere(String key) {
    return names.holder(key, null).map(ActorCell::info);
  }

  /** {@link HeldNames#reassert}: after a member joined (a healed partition shows so). */
  void reassert() {
    names.reassert();
  }

  /**
   * A named actor whose registry entry is no longer its own (the leader freed the name when the creating
   * node died mid-creation, and someone may have claimed it since) must not live on unregistered: a second
   * actor of the same name could exist. It dies; get-or-create callers find or create the one that holds
   * the name. {@code when} says when the name went, for the log and the death cause.
   */
  private void nameLost(ActorCell cell, String key, String when) {
    registry.get(key).thenAccept(current -> {
      if (current.isEmpty() || !current.get().actorId().equals(cell.actorId)) {
        LOG.warn("actor {} lost its name {} (freed or taken {}); stopping it", cell.actorId, key, when);
        registryJson.remove(cell.actorId);
        cell.kill("its name " + key + " was freed or taken by another actor " + when, false);
      }
    });
  }

  private ActorRecord record(ActorCell cell, String previousJson) {
    ActorRecord previous = previousJson == null ? null : ActorRegistry.decode(previousJson);
    long version = previous == null ? 0 : previous.version() + 1;
    boolean hard = cell.options.strategy() instanceof SchedulingStrategy.NodeAffinity a && !a.soft();
    ActorInfo i = cell.info();
    return new ActorRecord(cell.actorId, cell.options.namespace(), cell.options.name(), cell.className(), nodeId,
        i.state(), cell.options.lifetime(), nodeId, cell.ownerNodeId, cell.ownerActorId, i.restarts(),
        i.deathCause(), hard, cell.options.maxRestarts(), previous == null ? null : previous.creation(), version);
  }
}
