package io.kiln.runtime;

import io.vertx.core.Context;
import java.util.List;

/**
 * Facts about the actor whose constructor or method is running: identity, node, the resources it was
 * given (GPU device indices) and a way back to the runtime. Obtain it with {@link #current()} inside a
 * constructor or method; keep the reference for later asynchronous work.
 */
public interface ActorContext {

  String actorId();

  /** Null for an anonymous actor. */
  String name();

  String namespace();

  String nodeId();

  /** Resources reserved for the actor, with the GPU device indices assigned to it. */
  Allocation allocation();

  /** Distinct device indices of the GPUs assigned (one entry for a fractional share). */
  default List<Integer> gpuIndices() {
    return allocation().gpuIndices();
  }

  /** 0 on first construction, then the number of restarts. */
  int restartCount();

  KilnRuntime runtime();

  /** The actor's Vert.x context (its event loop): timers and completions for the actor go here. */
  Context vertxContext();

  /** A handle to this actor, e.g. to hand to others. */
  <T> ActorHandle<T> self(Class<T> type);

  /**
   * The context of the actor running on this thread.
   *
   * @throws IllegalStateException outside an actor's constructor or method
   */
  static ActorContext current() {
    ActorContext c = io.kiln.runtime.impl.CurrentActor.get();
    if (c == null) {
      throw new IllegalStateException("not inside an actor's constructor or method");
    }
    return c;
  }
}
