package io.kiln.runtime;

/**
 * What the runtime knows of an actor, as seen in the registry or on its node.
 *
 * @param actorId unique id, stable across restarts
 * @param namespace namespace of the name
 * @param name the actor's name, or null if anonymous
 * @param className implementation class
 * @param nodeId node it lives on
 * @param state lifecycle state
 * @param lifetime owned or detached
 * @param restarts how many times it has been restarted
 * @param deathCause why it died, when {@code state} is DEAD (else null)
 */
public record ActorInfo(String actorId, String namespace, String name, String className, String nodeId,
                        ActorState state, Lifetime lifetime, int restarts, String deathCause) {

  /** {@code namespace/name}, or the id for an anonymous actor. */
  public String displayName() {
    return name == null ? actorId : namespace + "/" + name;
  }
}
