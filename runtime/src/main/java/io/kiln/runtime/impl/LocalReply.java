package io.kiln.runtime.impl;

import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.time.Deadlines;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.lang.reflect.Type;
import java.util.concurrent.CompletableFuture;

/**
 * Where a call made on this node answers: the caller's future, completed on the caller's own Vert.x context
 * (or, for a caller on no context, on the actor's event loop), as an event-bus reply would be. So a caller
 * that is itself an actor or a verticle keeps its callbacks on its own thread, and no callback ever runs on
 * an actor's worker threads.
 *
 * <p>It is also the call's deadline, watched where the caller waits, as an event-bus request's timer is: on the
 * caller's event loop it joins that context's list in the node's {@link Deadlines} (one timer for every deadline
 * the context has in flight, the gateway's too) and the answer, completing there, unlinks it; a caller off an event
 * loop joins the facility's off-loop list (a lock, one timer for them all), which the answer unlinks wherever it
 * completes. Queued or running, a call past its deadline fails its caller; the call itself stays where it
 * is and its eventual answer goes nowhere.
 */
final class LocalReply extends Deadlines.Entry {

  private final CompletableFuture<Object> future;
  private final Context context;
  private final Type resultType;
  private final ActorHandleImpl<?> handle;

  /**
   * @param context where the caller's future completes
   * @param resultType the method's declared result type
   * @param handle the handle called through, for the timeout's message
   */
  LocalReply(CompletableFuture<Object> future, Context context, Type resultType, ActorHandleImpl<?> handle) {
    this.future = future;
    this.context = context;
    this.resultType = resultType;
    this.handle = handle;
  }

  /** Completes the caller's future with {@code reply}; a no-op once the caller has stopped waiting. */
  void complete(ReplyMessage reply) {
    if (future.isDone()) {
      return; // timed out: a late answer goes nowhere, as it would on the event bus
    }
    if (Vertx.currentContext() == context) {
      remove();
      CallPath.complete(future, reply, resultType);
    } else {
      context.runOnContext(v -> {
        remove(); // on the caller's context, where the deadline is listed
        CallPath.complete(future, reply, resultType);
      });
    }
  }

  /** Fails the caller's future as the event-bus path's per-call timer would. */
  @Override
  protected void expired() {
    if (future.isDone()) {
      return;
    }
    CallTimeoutException timeout = CallPath.timedOut(handle);
    if (Vertx.currentContext() == context) {
      future.completeExceptionally(timeout);
    } else {
      context.runOnContext(v -> future.completeExceptionally(timeout));
    }
  }
}
