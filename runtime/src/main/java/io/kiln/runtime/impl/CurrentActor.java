package io.kiln.runtime.impl;

import io.kiln.runtime.ActorContext;

/** Holds the context of the actor running on the current thread; set by the runtime around each invocation. */
public final class CurrentActor {

  private static final ThreadLocal<ActorContext> CURRENT = new ThreadLocal<>();

  private CurrentActor() {
  }

  public static ActorContext get() {
    return CURRENT.get();
  }

  /** Installs {@code ctx} and returns the previous one, to restore after the invocation. */
  static ActorContext set(ActorContext ctx) {
    ActorContext prev = CURRENT.get();
    if (ctx == null) {
      CURRENT.remove();
    } else {
      CURRENT.set(ctx);
    }
    return prev;
  }
}
