package io.kiln.runtime;

/**
 * Lifecycle of an actor: {@code PENDING → ALIVE ⇄ RESTARTING → DEAD}. Calls made while PENDING or
 * RESTARTING wait in the actor's mailbox; calls to a DEAD actor fail with {@link ActorDiedException}.
 */
public enum ActorState {
  /** Placed, constructor not yet finished. */
  PENDING,
  /** Constructed and serving calls. */
  ALIVE,
  /** Died with restarts left; the constructor is running again. */
  RESTARTING,
  /** Gone for good; the cause is in {@link ActorInfo#deathCause()}. A named actor's name is free again. */
  DEAD;

  public boolean isTerminal() {
    return this == DEAD;
  }
}
