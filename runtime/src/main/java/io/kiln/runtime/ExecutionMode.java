package io.kiln.runtime;

/** Where an actor's constructor and methods run. */
public enum ExecutionMode {
  /**
   * On threads of the actor's own (one thread per unit of {@code max_concurrency}): methods may block,
   * e.g. run a model. The default, like a Ray actor.
   */
  WORKER,
  /**
   * On the actor's Vert.x event loop: methods must never block and should return futures for anything
   * slow. For coordinators such as pool managers; saves a thread hop per call.
   */
  EVENT_LOOP
}
