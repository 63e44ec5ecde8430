package io.kiln.runtime.impl;

import io.kiln.runtime.Futures;
import io.kiln.runtime.spi.cluster.ClusterBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the named-actor registry true to membership: the leader frees (or relocates) entries of nodes that
 * left, and a node shutting down removes its own.
 */
final class RegistryJanitor {

  private static final Logger LOG = LoggerFactory.getLogger(RegistryJanitor.class);

  private final String nodeId;
  private final ClusterBackend backend;
  private final ActorRegistry registry;
  private final ActorCreator creator;

  RegistryJanitor(String nodeId, ClusterBackend backend, ActorRegistry registry, ActorCreator creator) {
    this.nodeId = nodeId;
    this.backend = backend;
    this.registry = registry;
    this.creator = creator;
  }

  /**
   * Leader duty: drop registry entries of nodes that are no longer members, freeing names of actors
   * that died with their node. Only the leader does this, so two nodes never both repair. Node rows of
   * dead nodes stay (shown as not alive) until the node rejoins or is removed by an operator.
   */
  void repair() {
    List<String> members = backend.members();
    registry.rawEntries().thenAccept(entries -> entries.forEach((key, json) -> {
      ActorRecord rec = ActorRegistry.decode(json);
      String home = rec.nodeId() != null ? rec.nodeId() : rec.creatorNodeId();
      if (home != null && !members.contains(home)) {
        if (rec.nodeId() != null && rec.relocatable()) {
          LOG.info("re-creating actor {} ({}) elsewhere: node {} is gone", key, rec.actorId(), home);
          creator.relocate(key, json, rec);
        } else {
          LOG.info("freeing name {} of actor {}: node {} is gone", key, rec.actorId(), home);
          registry.remove(key, json);
        }
      }
    }));
  }

  /** Removes the entries of actors this node hosts (it is shutting down). */
  CompletionStage<Void> removeOwnRecords() {
    return registry.rawEntries().thenCompose(entries -> {
      List<CompletionStage<Boolean>> removals = new ArrayList<>();
      entries.forEach((key, json) -> {
        ActorRecord rec = ActorRegistry.decode(json);
        if (nodeId.equals(rec.nodeId())) {
          removals.add(registry.remove(key, json));
        }
      });
      return Futures.allOf(removals);
    });
  }
}
