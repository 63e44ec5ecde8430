package io.kiln.runtime.impl;

import io.kiln.runtime.ActorContext;
import io.kiln.runtime.ActorCreation;
import io.kiln.runtime.ActorHandle;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorNameTakenException;
import io.kiln.runtime.ActorOptions;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.Futures;
import io.kiln.runtime.RetryPolicy;
import io.kiln.runtime.SchedulingStrategy;
import io.kiln.runtime.TimeoutPolicy;
import io.vertx.core.eventbus.DeliveryOptions;
import java.io.Serializable;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.UnaryOperator;

/**
 * Creates actors: anonymous ones are simply placed; named ones first claim their name with an atomic
 * {@code putIfAbsent} of a PENDING registry entry, so of any number of racing creators, on any nodes,
 * exactly one constructs the actor and the others (with get-if-exists) wait for it to become ALIVE.
 */
final class ActorCreator {

  /** Construction may load a model: the creation request's reply timeout is a backstop, not a limit. */
  private static final Duration CREATE_REPLY_TIMEOUT = TimeoutPolicy.REMOTE_CREATE_REPLY.timeout();
  /**
   * A remote node is asked first whether its agent answers at all: a member whose event bus cannot be reached
   * (a firewall, a partition, a certificate the cluster does not trust) would otherwise swallow the creation
   * request for {@link #CREATE_REPLY_TIMEOUT}. One extra round trip per remote creation.
   */
  static final DeliveryOptions REACH =
      new DeliveryOptions().setSendTimeout(TimeoutPolicy.REMOTE_CREATE_PING.toMillis());
  /** A holder that dies while we wait is replaced by us; this bounds how often that can repeat. */
  private static final RetryPolicy NAME_RACE = RetryPolicy.ACTOR_NAME_RACE;

  private final String nodeId;
  private final ActorRegistry registry;
  private final Placer placer;
  private final CallPath callPath;

  ActorCreator(String nodeId, ActorRegistry registry, Placer placer, CallPath callPath) {
    this.nodeId = nodeId;
    this.registry = registry;
    this.placer = placer;
    this.callPath = callPath;
  }

  <T> ActorCreation<T> creation(Serializable constructor, Object[] args) {
    return new Creation<>(constructor, args);
  }

  private final class Creation<T> implements ActorCreation<T> {
    private final Serializable constructor;
    private final Object[] args;
    private ActorOptions.Builder options = ActorOptions.builder();

    Creation(Serializable constructor, Object[] args) {
      this.constructor = Objects.requireNonNull(constructor, "constructor");
      this.args = args;
    }

    @Override
    public ActorCreation<T> options(ActorOptions o) {
      options = o.toBuilder();
      return this;
    }

    @Override
    public ActorCreation<T> with(UnaryOperator<ActorOptions.Builder> edit) {
      options = edit.apply(options);
      return this;
    }

    @Override
    public CompletionStage<ActorHandle<T>> remote() {
      ActorOptions o;
      try {
        o = options.build();
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
      return create(constructor, args, o);
    }
  }

  @SuppressWarnings("unchecked")
  private <T> CompletionStage<ActorHandle<T>> create(Serializable ctorFn, Object[] args, ActorOptions o) {
    MethodRef ctor;
    try {
      ctor = Lambdas.resolve(ctorFn);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    Class<T> type = (Class<T>) ctor.ownerClass();
    ActorContext owner = CurrentActor.get();
    String ownerNode = owner != null ? owner.nodeId() : nodeId;
    String ownerActor = owner != null ? owner.actorId() : null;
    if (o.name() == null) {
      return place(new AgentRequests.CreateActor(Ids.newId(), ctor, ctorFn, args, o, ownerNode, ownerActor, null, 0))
          .thenApply(info -> callPath.handle(info.actorId(), o.namespace(), null, info.nodeId(), type));
    }
    return getOrCreate(ctor, ctorFn, args, o, ownerNode, ownerActor, type, 1);
  }

  private <T> CompletionStage<ActorHandle<T>> getOrCreate(MethodRef ctor, Serializable ctorFn, Object[] args,
                                                          ActorOptions o, String ownerNode, String ownerActor,
                                                          Class<T> type, int attempt) {
    String actorId = Ids.newId();
    boolean hard = o.strategy() instanceof SchedulingStrategy.NodeAffinity a && !a.soft();
    AgentRequests.CreateActor req = new AgentRequests.CreateActor(actorId, ctor, ctorFn, args, o, ownerNode,
        ownerActor, null, 0);
    // Only a detached actor may outlive its node (an owned one dies with it anyway).
    String creation = !hard && o.maxRestarts() != 0 && o.lifetime() == io.kiln.runtime.Lifetime.DETACHED
        ? AgentRequests.armour(req) : null;
    ActorRecord pending = new ActorRecord(actorId, o.namespace(), o.name(), ctor.ownerClass().getName(), null,
        ActorState.PENDING, o.lifetime(), nodeId, ownerNode, ownerActor, 0, null, hard, o.maxRestarts(),
        creation, 0);
    String json = ActorRegistry.encode(pending);
    String key = pending.key();
    return registry.putIfAbsent(pending, json).thenCompose(existing -> {
      if (existing.isEmpty()) {
        CompletionStage<ActorInfo> placed = place(req.relocated(json, 0));
        return placed.handle((info, err) -> {
          if (err != null) {
            registry.remove(key, json); // free the name we claimed; no-op if the host already did
            throw new java.util.concurrent.CompletionException(Futures.unwrap(err));
          }
          return callPath.handle(info.actorId(), o.namespace(), o.name(), info.nodeId(), type);
        });
      }
      ActorRecord holder = existing.get();
      if (!o.getIfExists()) {
        return CompletableFuture.failedFuture(new ActorNameTakenException("actor name " + key
            + " is taken by actor " + holder.actorId() + " (" + holder.state() + ")"));
      }
      return registry.await(key, r -> r.state() == ActorState.ALIVE || r.state() == ActorState.RESTARTING)
          .thenCompose(live -> {
            if (live.isPresent()) {
              ActorRecord r = live.get();
              return CompletableFuture.completedFuture(callPath.handle(r.actorId(), o.namespace(), o.name(), r.nodeId(),
                  type));
            }
            if (!NAME_RACE.allows(attempt)) {
              return CompletableFuture.failedFuture(new io.kiln.runtime.ActorDiedException(holder.actorId(),
                  "actor " + key + " kept dying while being created (" + NAME_RACE + ")"));
            }
            return getOrCreate(ctor, ctorFn, args, o, ownerNode, ownerActor, type, attempt + 1);
          });
    });
  }

  CompletionStage<ActorInfo> place(AgentRequests.CreateActor req) {
    ActorOptions o = req.options();
    String what = "actor " + (o.name() == null ? req.ctor().ownerClass().getSimpleName() : o.namespace() + "/" + o.name());
    DeliveryOptions delivery = new DeliveryOptions().setSendTimeout(CREATE_REPLY_TIMEOUT.toMillis());
    return placer.place(o.resources(), o.strategy(), o.placementTimeout(), what,
        node -> reachable(node).thenCompose(v -> callPath.request(node, NodeAgent.address(node), req, ActorInfo.class,
            delivery)));
  }

  /** Completes once {@code node}'s agent answered a ping; a node that does not answer refuses the placement. */
  private CompletionStage<Void> reachable(String node) {
    if (node.equals(nodeId)) {
      return CompletableFuture.completedFuture(null);
    }
    return callPath.<Void>request(node, NodeAgent.address(node), new io.vertx.core.json.JsonObject().put("op", "ping"),
        Void.class, REACH).exceptionallyCompose(err -> {
          Throwable cause = Futures.unwrap(err);
          if (cause instanceof io.vertx.core.eventbus.ReplyException r
              && r.failureType() == io.vertx.core.eventbus.ReplyFailure.TIMEOUT) {
            return CompletableFuture.failedFuture(new PlacementRefusedException("node " + node
                + " is a member but its event bus did not answer within " + REACH.getSendTimeout() / 1000
                + " s (" + TimeoutPolicy.REMOTE_CREATE_PING.name() + "; is its bus port reachable from here, and does"
                + " it hold the cluster's TLS certificate?)"));
          }
          return CompletableFuture.failedFuture(cause);
        });
  }

  /**
   * Leader duty after a node died: re-creates a detached, not hard-pinned actor that has restarts left on
   * another node, under the same id and name, so existing handles follow it.
   */
  void relocate(String key, String json, ActorRecord rec) {
    AgentRequests.CreateActor original;
    try {
      original = AgentRequests.unarmour(rec.creation());
    } catch (RuntimeException e) {
      registry.remove(key, json);
      return;
    }
    ActorRecord pending = new ActorRecord(rec.actorId(), rec.namespace(), rec.name(), rec.className(), null,
        ActorState.PENDING, rec.lifetime(), nodeId, rec.ownerNodeId(), rec.ownerActorId(),
        rec.restarts() + 1, "node " + rec.nodeId() + " died", false, rec.maxRestarts(), rec.creation(),
        rec.version() + 1);
    String pendingJson = ActorRegistry.encode(pending);
    registry.replace(key, json, pendingJson).thenAccept(ok -> {
      if (ok) {
        place(original.relocated(pendingJson, rec.restarts() + 1)).whenComplete((info, err) -> {
          if (err != null) {
            registry.remove(key, pendingJson);
          }
        });
      }
    });
  }
}
