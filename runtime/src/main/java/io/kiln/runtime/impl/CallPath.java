package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.CallTimeoutException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnException;
import io.kiln.runtime.NodeDiedException;
import io.kiln.runtime.NodeUnreachableException;
import io.kiln.runtime.time.Deadlines;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;
import java.io.Serializable;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Requests from this node: actor calls (the runtime's hot path) and node-agent requests. Every request to
 * another node is tracked so that node's death fails it at once, and an actor call also when the event-bus
 * connection to its node breaks ({@link Reachability}); an actor call to a node that is unreachable now fails
 * without being sent. Replies are adapted from {@link ReplyMessage}s and event-bus failures into the runtime's
 * exceptions.
 */
final class CallPath {

  /** Node-agent commands (kill, info): answered at once, so a long wait means the node is in trouble. */
  static final DeliveryOptions CONTROL = new DeliveryOptions().setSendTimeout(30_000);

  private final String nodeId;
  private final Vertx vertx;
  private final Supplier<List<String>> members;
  private final CallTracker calls;
  private final Reachability reach;
  private final ActorRegistry registry;
  private final LocalActors localActors;
  /** The clock of local calls' deadlines, the facility's ({@code System::nanoTime}). */
  private final LongSupplier nanoClock;
  /** Local calls' deadlines: the node's Vert.x facility, on the caller's event loop (one timer per loop, not per call). */
  private final Deadlines deadlines;

  /**
   * @param members the live cluster members, answered from local state
   * @param localActors the actors on this node: calls to them skip the event bus, info about them needs no message
   */
  CallPath(String nodeId, Vertx vertx, Supplier<List<String>> members, CallTracker calls, Reachability reach,
           ActorRegistry registry, LocalActors localActors) {
    this.deadlines = Deadlines.of(vertx);
    this.nanoClock = deadlines.clock();
    this.nodeId = nodeId;
    this.vertx = vertx;
    this.members = members;
    this.calls = calls;
    this.reach = reach;
    this.registry = registry;
    this.localActors = localActors;
  }

  /** A handle on an actor; its calls go through this call path. */
  <T> ActorHandle<T> handle(String actorId, String namespace, String name, String actorNodeId, Class<T> type) {
    return new ActorHandleImpl<>(this, actorId, namespace, name, actorNodeId, type, ActorHandle.DEFAULT_CALL_TIMEOUT);
  }


  LongSupplier nanoClock() {
    return nanoClock;
  }

  /**
   * Sends a call to an actor and adapts the reply; the hot path of the runtime. A call to a live actor on
   * this node is handed straight to its cell's event loop (arguments and result by reference, as the local
   * event bus passes them); any other goes over the event bus.
   */
  @SuppressWarnings("unchecked")
  <R> CompletionStage<R> invoke(ActorHandleImpl<?> h, Serializable fn, Object[] args) {
    MethodRef method = Lambdas.resolve(fn);
    CallMessage msg = new CallMessage(method, fn, args);
    CompletableFuture<R> result = new CompletableFuture<>();
    String target = h.nodeId;
    ActorCell cell = target.equals(nodeId) ? localActors.get(h.actorId) : null;
    Context cellContext = cell == null ? null : cell.context();
    if (cellContext != null) {
      Context caller = Vertx.currentContext();
      long now = nanoClock.getAsLong();
      long deadline = now + Math.min(h.timeoutNanos, Long.MAX_VALUE - Math.max(0, now));
      LocalReply reply = new LocalReply((CompletableFuture<Object>) result,
          caller != null ? caller : cellContext, method.resultType(), h);
      if (h.timeoutNanos != Long.MAX_VALUE) {
        deadlines.add(reply, deadline);
      }
      Invocation inv = new Invocation(msg, reply);
      cellContext.runOnContext(v -> cell.accept(inv));
    } else if (target.equals(nodeId) || members.get().contains(target)) {
      send(h, target, method, msg, result);
    } else if (h.name() != null) {
      follow(h).whenComplete((moved, err) -> {
        if (moved != null) {
          send(h, moved, method, msg, result);
        } else {
          result.completeExceptionally(new ActorDiedException(h.actorId, "actor " + h + " is dead: node " + target
              + " has left the cluster"));
        }
      });
    } else {
      result.completeExceptionally(new ActorDiedException(h.actorId, "actor " + h + " is dead: node " + target
          + " has left the cluster"));
    }
    return result;
  }

  private <R> void send(ActorHandleImpl<?> h, String target, MethodRef method, CallMessage msg,
                        CompletableFuture<R> result) {
    calls.track(target, result, n -> new ActorDiedException(h.actorId, "actor " + h + " died with its node: node "
        + n + " left the cluster"), (n, why) -> new NodeUnreachableException(n, "no answer from actor " + h
        + ": node " + n + " is unreachable (" + why + "); the call may or may not have run there"));
    // Checked after tracking: an unreachable mark set after this check is followed by a sweep that sees the call.
    if (!target.equals(nodeId) && reach.unreachable(target)) {
      result.completeExceptionally(notSent(h, target));
      return;
    }
    vertx.eventBus().<ReplyMessage>request(ActorCell.address(h.actorId), msg, h.delivery).onComplete(ar -> {
      if (ar.succeeded()) {
        complete(result, ar.result().body(), method.resultType());
      } else {
        callFailed(result, ar.cause(), h);
      }
    });
  }

  /** A call not sent: the actor's node is unreachable now. */
  private NodeUnreachableException notSent(ActorHandleImpl<?> h, String target) {
    String why = reach.why(target);
    return new NodeUnreachableException(target, "actor " + h + " not called: node " + target + " is unreachable ("
        + (why == null ? "its event-bus connection closed" : why) + ")");
  }

  /** Pings {@code target}'s agent, waiting at most {@code timeoutMs} for the answer. */
  CompletionStage<Void> ping(String target, long timeoutMs) {
    return request(target, NodeAgent.address(target), new JsonObject().put("op", "ping"), Void.class,
        new DeliveryOptions().setSendTimeout(timeoutMs));
  }

  /**
   * A named actor whose node left may have been re-created elsewhere by the leader under the same id:
   * wait (up to the handle's timeout) for it to be ALIVE on a live node, and point the handle there.
   * Completes with null when it is gone for good: its entry is freed or taken, or it says the actor cannot move
   * (hard affinity, or no restart left), which is known at once, without waiting for the leader to free the name.
   */
  private CompletionStage<String> follow(ActorHandleImpl<?> h) {
    String key = ActorRecord.key(h.namespace(), h.name());
    return registry.await(key, r -> !r.actorId().equals(h.actorId) || (r.state() == ActorState.ALIVE
            && r.nodeId() != null && members.get().contains(r.nodeId()))
            || (!r.relocatable() && r.nodeId() != null && !members.get().contains(r.nodeId())))
        .toCompletableFuture()
        .completeOnTimeout(Optional.empty(), h.timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .thenApply(rec -> {
          if (rec.isPresent() && rec.get().actorId().equals(h.actorId) && rec.get().state() == ActorState.ALIVE
              && rec.get().nodeId() != null && members.get().contains(rec.get().nodeId())) {
            h.moveTo(rec.get().nodeId());
            return rec.get().nodeId();
          }
          return null;
        });
  }

  @SuppressWarnings("unchecked")
  static <R> void complete(CompletableFuture<R> f, ReplyMessage reply, Type type) {
    if (reply.isError()) {
      f.completeExceptionally(reply.error());
    } else {
      try {
        f.complete((R) reply.value(type));
      } catch (RuntimeException e) {
        f.completeExceptionally(e);
      }
    }
  }

  private void callFailed(CompletableFuture<?> f, Throwable cause, ActorHandleImpl<?> h) {
    if (actorGone(cause)) {
      // The address is gone: the actor died. Ask its node why, for a useful message.
      actorInfo(h.actorId, h.nodeId).whenComplete((info, err) -> f.completeExceptionally(new ActorDiedException(
          h.actorId, "actor " + h + " is dead: " + (info != null && info.deathCause() != null ? info.deathCause()
          : "no longer registered"))));
    } else if (cause instanceof ReplyException re && re.failureType() == ReplyFailure.TIMEOUT) {
      f.completeExceptionally(timedOut(h));
    } else {
      f.completeExceptionally(cause instanceof ReplyException re ? new KilnException(re.getMessage()) : cause);
    }
  }

  /** A call through {@code h} not answered within the handle's timeout (the same words on both paths). */
  static CallTimeoutException timedOut(ActorHandleImpl<?> h) {
    return new CallTimeoutException("no reply from actor " + h + " within " + h.timeout);
  }

  /**
   * Whether a failed request means its address is gone: no handlers, or a message Vert.x discarded
   * because the consumer unregistered while it waited (Vert.x reports that as a TIMEOUT).
   */
  static boolean actorGone(Throwable cause) {
    return cause instanceof ReplyException re && (re.failureType() == ReplyFailure.NO_HANDLERS
        || (re.failureType() == ReplyFailure.TIMEOUT && re.getMessage() != null
        && re.getMessage().startsWith("Discarded")));
  }

  CompletionStage<ActorInfo> actorInfo(String actorId, String actorNodeId) {
    if (actorNodeId.equals(nodeId)) {
      return CompletableFuture.completedFuture(localActors.info(actorId).orElse(new ActorInfo(actorId, null, null,
          null, actorNodeId, ActorState.DEAD, null, 0, "unknown actor")));
    }
    JsonObject cmd = new JsonObject().put("op", "info").put("actorId", actorId);
    return this.<ActorInfo>request(actorNodeId, NodeAgent.address(actorNodeId), cmd, ActorInfo.class, CONTROL)
        .handle((info, err) -> info != null ? info : new ActorInfo(actorId, null, null, null, actorNodeId,
            ActorState.DEAD, null, 0, err != null ? "node " + actorNodeId + " unreachable: "
            + Futures.unwrap(err).getMessage() : "unknown actor"));
  }

  /** A request to a node's agent whose reply is a {@link ReplyMessage}; tracked for node death. */
  <R> CompletionStage<R> request(String target, String address, Object body, Type resultType, DeliveryOptions opts) {
    CompletableFuture<R> f = new CompletableFuture<>();
    if (!target.equals(nodeId) && !members.get().contains(target)) {
      f.completeExceptionally(new NodeDiedException("node " + target + " is not a cluster member"));
      return f;
    }
    calls.track(target, f, n -> new NodeDiedException("node " + n + " left the cluster"));
    vertx.eventBus().<ReplyMessage>request(address, body, opts).onComplete(ar -> {
      if (ar.succeeded()) {
        complete(f, ar.result().body(), resultType);
      } else {
        f.completeExceptionally(ar.cause());
      }
    });
    return f;
  }
}
