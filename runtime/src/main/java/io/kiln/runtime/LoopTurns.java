package io.kiln.runtime;

import io.netty.channel.SingleThreadEventLoop;
import io.vertx.core.Context;
import io.vertx.core.internal.ContextInternal;

/** The end of an event loop's turn, for work that should see everything the turn brought in. */
public final class LoopTurns {

  private LoopTurns() {
  }

  /**
   * Runs {@code task} on this thread once its event loop has run the tasks and I/O of its current turn, before it
   * waits again (Netty's tail tasks), with {@code context} current: not queued behind later turns' work, and nothing
   * is woken.
   *
   * @return false, with nothing scheduled, unless the calling thread is {@code context}'s event loop: the caller then
   *     runs the work itself
   */
  public static boolean atTurnEnd(Context context, Runnable task) {
    ContextInternal c = (ContextInternal) context;
    if (!c.isEventLoopContext() || !(c.nettyEventLoop() instanceof SingleThreadEventLoop loop) || !loop.inEventLoop()) {
      return false;
    }
    // A tail task runs outside any context: dispatched on this one, the task finds its context current, as the code it
    // calls expects (an actor call's reply comes back to the calling context, a deadline goes on its loop's list).
    loop.executeAfterEventLoopIteration(() -> c.dispatch(task));
    return true;
  }
}
