package io.kiln.runtime.impl;

import io.kiln.runtime.ActorDiedException;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.Allocation;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.Lifetime;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.SchedulingStrategy;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent (Ray's raylet): the authoritative ledger of this node's resources, the host of its
 * actors and tasks, and the writer of its row in the node table. Requests arrive on
 * {@code kiln.node.<nodeId>}; a request that no longer fits the ledger is refused with
 * {@link PlacementRefusedException} and the caller spills back to its next candidate.
 */
final class NodeAgent {

  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);
  static final String ACTOR_DIED_EVENTS = "kiln.events.actor-died";

  private final KilnRuntime runtime;
  private final Vertx vertx;
  private final NodeOptions node;
  private final ResourceLedger ledger;
  private final LocalActors cells;
  private final Runnable resourcesReleased;
  private final CallPath callPath;
  private final BundleHost bundles;
  private long sweepTimer = -1;
  /** The named actors' registry entries: mirrored state, freed and lost names. */
  private final NamedActors named;
  private final NodeRow row;
  private final List<MessageConsumer<?>> consumers = new ArrayList<>();
  private WorkerExecutor taskExecutor;
  private volatile boolean closing;
  /** The agent's own context: what outlives the actors' verticles (their consumers go when they are undeployed). */
  private volatile io.vertx.core.Context context;

  /**
   * @param runtime the runtime hosting this agent, only handed to actors and tasks as their context's
   *     {@link KilnRuntime} (the public interface: hosted code may create actors and tasks itself)
   * @param resourcesReleased told when resources return to the ledger, so waiting placements retry
   * @param callPath makes handles of hosted actors ({@code ActorContext.self})
   */
  /** The node's Vert.x: what a cell not yet deployed (its own {@code vertx} still unset) runs on. */
  Vertx vertx() {
    return vertx;
  }

  NodeAgent(KilnRuntime runtime, Vertx vertx, NodeOptions node, ResourceLedger ledger, LocalActors cells,
            ActorRegistry registry, NodeTable nodeTable, Runnable resourcesReleased, CallPath callPath,
            PlacementGroupTable groups) {
    this.runtime = runtime;
    this.vertx = vertx;
    this.node = node;
    this.ledger = ledger;
    this.cells = cells;
    this.named = new NamedActors(node.nodeId(), registry, cells, () -> closing);
    this.resourcesReleased = resourcesReleased;
    this.callPath = callPath;
    this.bundles = new BundleHost(node.nodeId(), ledger, cells, groups, callPath.nanoClock(), this::publishRow,
        resourcesReleased);
    this.row = new NodeRow(vertx, node, ledger, nodeTable, callPath.nanoClock(), () -> context, () -> closing);
  }

  /**
   * The most often this node writes its row (a change after a quiet interval is written at once). Other
   * nodes' placement sees this node's availability up to this late; a refusal makes them spill back.
   */
  static final long ROW_INTERVAL_MS = 100;

  static String address(String nodeId) {
    return "kiln.node." + nodeId;
  }

  String nodeId() {
    return node.nodeId();
  }

  KilnRuntime runtime() {
    return runtime;
  }

  CallPath callPath() {
    return callPath;
  }

  /** The clock local calls' deadlines are written in. */
  java.util.function.LongSupplier nanoClock() {
    return callPath.nanoClock();
  }

  /**
   * Runs {@code task} on {@code cellContext} after {@code delayMillis}. The timer is the agent's, not the
   * cell's: undeploying or abandoning a cell never cancels a wake-up that callers still wait on.
   */
  void wakeAfter(long delayMillis, io.vertx.core.Context cellContext, Runnable task) {
    context.runOnContext(v -> vertx.setTimer(delayMillis, id -> cellContext.runOnContext(x -> task.run())));
  }

  Future<Void> start() {
    context = vertx.getOrCreateContext();
    taskExecutor = vertx.createSharedWorkerExecutor("kiln-tasks-" + node.nodeId(),
        Math.max(4, Runtime.getRuntime().availableProcessors() * 8), 365, TimeUnit.DAYS);
    MessageConsumer<Object> agent = vertx.eventBus().consumer(address(node.nodeId()), this::onRequest);
    MessageConsumer<JsonObject> deaths = vertx.eventBus().consumer(ACTOR_DIED_EVENTS, m -> ownerDied(m.body()));
    consumers.add(agent);
    consumers.add(deaths);
    sweepTimer = vertx.setPeriodic(BUNDLE_SWEEP_MS, id -> bundles.sweep());
    return Future.all(agent.completion(), deaths.completion()).mapEmpty();
  }

  /** Advertises a service port in this node's row (the gateway registers {@code http} and {@code grpc}). */
  void setService(String name, String value) {
    row.setService(name, value);
  }

  // ---- requests -----------------------------------------------------------------------------------

  private void onRequest(Message<Object> m) {
    Object body = m.body();
    if (body instanceof AgentRequests.CreateActor c) {
      createActor(m, c);
    } else if (body instanceof AgentRequests.RunTask t) {
      runTask(m, t);
    } else if (body instanceof JsonObject cmd) {
      command(m, cmd);
    } else {
      m.reply(ReplyMessage.failed(new IllegalArgumentException("unknown agent request " + body.getClass())));
    }
  }

  private void createActor(Message<Object> m, AgentRequests.CreateActor req) {
    if (closing) {
      m.reply(ReplyMessage.failed(new PlacementRefusedException("node " + nodeId() + " is shutting down")));
      return;
    }
    if (req.options().name() != null) {
      // A name whose actor still lives here (its entry freed by the other side of a partition): no second one.
      String key = ActorRecord.key(req.options().namespace(), req.options().name());
      Optional<ActorCell> live = named.holder(key, req.actorId());
      if (live.isPresent()) {
        named.reclaim(key, live.get(), req.pendingRecordJson()).whenComplete((info, err) -> m.reply(
            err == null && info.isPresent() ? ReplyMessage.ok(info.get(), ActorInfo.class)
                : ReplyMessage.failed(new io.kiln.runtime.ActorNameTakenException("actor name " + key + " is held on "
                    + nodeId() + " by live actor " + live.get().actorId))));
        return;
      }
    }
    String[] whyNot = new String[1];
    Optional<Allocation> allocation = reserve(req.options().resources(), req.options().strategy(), whyNot);
    if (allocation.isEmpty()) {
      m.reply(ReplyMessage.failed(new PlacementRefusedException(whyNot[0])));
      return;
    }
    publishRow();
    ActorCell cell = new ActorCell(this, req.actorId(), req.options(), allocation.get(), req.ctor(), req.ctorFn(),
        req.args(), req.ownerNodeId(), req.ownerActorId(), req.restarts());
    cells.add(cell);
    named.created(req.actorId(), req.pendingRecordJson());
    vertx.deployVerticle(cell).onFailure(err -> {
      cells.remove(req.actorId());
      release(allocation.get());
      m.reply(ReplyMessage.failed(err));
    });
    cell.started().whenComplete((info, err) -> m.reply(err != null ? ReplyMessage.failed(err)
        : ReplyMessage.ok(info, ActorInfo.class)));
  }

  private void runTask(Message<Object> m, AgentRequests.RunTask req) {
    if (closing) {
      m.reply(ReplyMessage.failed(new PlacementRefusedException("node " + nodeId() + " is shutting down")));
      return;
    }
    String[] whyNot = new String[1];
    Optional<Allocation> allocation = reserve(req.resources(), req.strategy(), whyNot);
    if (allocation.isEmpty()) {
      m.reply(ReplyMessage.failed(new PlacementRefusedException(whyNot[0])));
      return;
    }
    publishRow();
    // A task in a bundle that is freed under it is answered at once (its thread cannot be stopped safely).
    java.util.concurrent.atomic.AtomicBoolean answered = new java.util.concurrent.atomic.AtomicBoolean();
    bundles.taskRunning(allocation.get(), () -> {
      if (answered.compareAndSet(false, true)) {
        m.reply(ReplyMessage.failed(new io.kiln.runtime.KilnException("task " + req.fn().displayName()
            + " was cancelled: its placement-group bundle was freed")));
      }
    });
    taskExecutor.executeBlocking(() -> {
      var previous = CurrentTask.set(new CurrentTask.Context(req.taskId(), nodeId(), allocation.get(), runtime));
      try {
        return ReplyMessage.ok(Invoker.callTask(req.taskFn(), req.fn(), req.args()), req.fn().resultType());
      } catch (Throwable t) {
        return ReplyMessage.failed(t);
      } finally {
        CurrentTask.set(previous);
        release(allocation.get());
      }
    }, false).onComplete(ar -> {
      if (answered.compareAndSet(false, true)) {
        m.reply(ar.succeeded() ? ar.result() : ReplyMessage.failed(ar.cause()));
      }
    });
  }

  /** From the bundle the strategy names, or from the node's free pool; {@code whyNot[0]} says why not. */
  private Optional<Allocation> reserve(io.kiln.runtime.Resources need, SchedulingStrategy strategy, String[] whyNot) {
    if (strategy instanceof SchedulingStrategy.InPlacementGroup pg) {
      return bundles.reserve(pg, need, whyNot);
    }
    Optional<Allocation> a = ledger.tryReserve(need);
    if (a.isEmpty()) {
      whyNot[0] = "node " + nodeId() + " has " + ledger.available() + " available, needs " + need;
    }
    return a;
  }

  /** How often bundles the group table no longer names are looked for. */
  static final long BUNDLE_SWEEP_MS = 2_000;

  /** Tells the bundles a group's row changed (a removed or failed group's bundles go at once). */
  void groupChanged() {
    bundles.sweep();
  }

  private void command(Message<Object> m, JsonObject cmd) {
    if (cmd.getString("op", "").startsWith("pg.")) {
      m.reply(bundles.command(cmd, closing));
      return;
    }
    String actorId = cmd.getString("actorId");
    switch (cmd.getString("op", "")) {
      case "info" -> m.reply(ReplyMessage.ok(cells.info(actorId).orElse(null), ActorInfo.class));
      case "ping" -> m.reply(ReplyMessage.ok(null, Void.class));
      case "kill" -> {
        ActorCell cell = cells.get(actorId);
        if (cell == null) {
          m.reply(ReplyMessage.failed(new ActorDiedException(actorId, "actor " + actorId + " is not alive on "
              + nodeId())));
        } else {
          cell.kill(cmd.getString("cause", "killed"), cmd.getBoolean("allowRestart", false))
              .whenComplete((v, e) -> m.reply(ReplyMessage.ok(null, Void.class)));
        }
      }
      default -> m.reply(ReplyMessage.failed(new IllegalArgumentException("unknown agent command " + cmd)));
    }
  }

  // ---- cell lifecycle -----------------------------------------------------------------------------

  /** Mirrors a named actor's state into the registry ({@link NamedActors#stateChanged}). */
  void stateChanged(ActorCell cell) {
    named.stateChanged(cell);
  }

  /** Frees what a dead actor held: resources, its name, its verticle; tells owners' children to die. */
  void cellDied(ActorCell cell) {
    ActorInfo info = cell.info();
    cells.buried(cell, info);
    release(cell.allocation);
    Future<Boolean> nameFreed = named.died(cell);
    if (!closing) {
      answerForTheDead(cell);
    }
    Future<Void> undeployed = cell.deployed() && cell.deploymentID() != null ? vertx.undeploy(cell.deploymentID())
        : Future.succeededFuture();
    Future.join(nameFreed, undeployed).onComplete(ar -> cell.terminated().complete(null));
    if (!closing) {
      vertx.eventBus().publish(ACTOR_DIED_EVENTS, new JsonObject().put("actorId", cell.actorId).put("nodeId", nodeId()));
    }
    LOG.debug("actor {} died: {}", cell.displayName(), info.deathCause());
  }

  /**
   * Keeps the dead actor's address answering, with its death, for {@link #TOMBSTONE_MS}: its verticle's
   * consumer goes with the verticle, but other nodes learn that only as the cluster's subscriptions catch up,
   * and a call they route here meanwhile would find no handler and wait for its whole timeout.
   */
  private void answerForTheDead(ActorCell cell) {
    ActorDiedException died = cell.diedException();
    context.runOnContext(v -> {
      var tombstone = vertx.eventBus().<Object>consumer(ActorCell.address(cell.actorId),
          m -> m.reply(ReplyMessage.failed(died)));
      vertx.setTimer(TOMBSTONE_MS, id -> tombstone.unregister());
    });
  }

  /** How long a dead actor's address still answers with its death. */
  static final long TOMBSTONE_MS = 10_000;

  private void release(Allocation allocation) {
    if (bundles.release(allocation)) {
      return; // room in a bundle, not on the node: the bundle told the waiting placements
    }
    if (ledger.release(allocation)) {
      publishRow();
      resourcesReleased.run();
    }
  }

  /** Owned actors die with their owner (an actor anywhere). */
  private void ownerDied(JsonObject event) {
    String deadActor = event.getString("actorId");
    for (ActorCell c : cells.cells()) {
      if (c.options.lifetime() == Lifetime.OWNED && deadActor.equals(c.ownerActorId)) {
        c.kill("owner actor " + deadActor + " died", false);
      }
    }
  }

  /** The live actor here holding name {@code key} (namespace/name), if any: {@link HeldNames#holder}. */
  Optional<ActorInfo> heldHere(String key) {
    return named.heldHere(key);
  }

  /**
   * A member joined: also how a healed partition shows (the other side's members join), after which the registry may
   * have lost or given away the names of live actors here ({@link HeldNames#reassert}).
   */
  void memberJoined() {
    if (!closing) {
      named.reassert();
    }
  }

  /** Owned actors die with their owner's node. */
  void nodeDied(String deadNode) {
    for (ActorCell c : cells.cells()) {
      if (c.options.lifetime() == Lifetime.OWNED && deadNode.equals(c.ownerNodeId)) {
        c.kill("owner node " + deadNode + " died", false);
      }
    }
  }

  // ---- node row -----------------------------------------------------------------------------------

  /** This node's row changed (resources, services): it is written now or at the end of the interval. */
  void publishRow() {
    row.changed();
  }


  /** Kills every hosted actor (names freed) and stops serving requests. */
  Future<Void> shutdown() {
    closing = true;
    List<Future<?>> done = new ArrayList<>();
    for (ActorCell c : new ArrayList<>(cells.cells())) {
      c.kill("node " + nodeId() + " shut down", false);
      done.add(Future.fromCompletionStage(c.terminated()));
    }
    for (MessageConsumer<?> consumer : consumers) {
      done.add(consumer.unregister());
    }
    if (taskExecutor != null) {
      done.add(taskExecutor.close());
    }
    vertx.cancelTimer(sweepTimer);
    // The row is removed next (RuntimeImpl): no write of it may land after that.
    return Future.join(done).onComplete(ar -> bundles.clear()).transform(ar -> Future.fromCompletionStage(row.close())).mapEmpty();
  }

  /** Drops every hosted actor without cleanup or replies: a simulated process crash. */
  void abandon() {
    closing = true;
    row.close();
    for (ActorCell c : cells.cells()) {
      c.abandon();
      String deployment = c.deployed() ? c.deploymentID() : null;
      if (deployment != null) {
        vertx.undeploy(deployment);
      }
    }
    cells.clear();
    consumers.forEach(MessageConsumer::unregister);
    vertx.cancelTimer(sweepTimer);
  }
}
