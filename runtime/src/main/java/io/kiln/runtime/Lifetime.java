package io.kiln.runtime;

/** Who keeps an actor alive. */
public enum Lifetime {
  /** Dies with its owner: the actor that created it, or the node whose driver created it. */
  OWNED,
  /** Lives until killed or until its node dies, whatever happens to its creator. */
  DETACHED
}
