package io.kiln.runtime.impl;

import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.Lifetime;

/**
 * A named actor's entry in the registry ({@code kiln.actors}, key {@code namespace/name}), stored as
 * JSON. Written PENDING by the creator, then only by the hosting node as the actor changes state, and
 * removed when it dies (freeing the name); the leader removes entries of dead nodes.
 *
 * @param nodeId hosting node, null while PENDING and not yet placed
 * @param creatorNodeId node that wrote the PENDING entry (cleans up if it dies mid-creation)
 * @param ownerNodeId node of the owner (OWNED lifetime)
 * @param ownerActorId owning actor, or null when owned by the node's driver
 * @param hardAffinity whether the actor must die with its node rather than move
 * @param maxRestarts the actor's restart budget (-1 unlimited)
 * @param creation for an actor that may move to another node when its node dies (not hard affinity,
 *     restarts allowed): its creation request, CBOR encoded and base64 armoured; null otherwise
 * @param version bumped on every write so conditional replaces never confuse two states
 */
record ActorRecord(String actorId, String namespace, String name, String className, String nodeId,
                   ActorState state, Lifetime lifetime, String creatorNodeId, String ownerNodeId,
                   String ownerActorId, int restarts, String deathCause, boolean hardAffinity, int maxRestarts,
                   String creation, long version) {

  static String key(String namespace, String name) {
    return namespace + "/" + name;
  }

  String key() {
    return key(namespace, name);
  }

  ActorRecord withState(ActorState newState, String newNodeId, int newRestarts, String cause) {
    return new ActorRecord(actorId, namespace, name, className, newNodeId, newState, lifetime, creatorNodeId,
        ownerNodeId, ownerActorId, newRestarts, cause, hardAffinity, maxRestarts, creation, version + 1);
  }

  /** Whether the leader may re-create this actor elsewhere after its node died. */
  boolean relocatable() {
    return creation != null && !hardAffinity && (maxRestarts == -1 || restarts < maxRestarts);
  }

  ActorInfo toInfo() {
    return new ActorInfo(actorId, namespace, name, className, nodeId, state, lifetime, restarts, deathCause);
  }
}
